/** ChunkedDecoder: a chunked HTTP/1.1 body (RFC 9112 §7.1) decoded as it arrives, every line bounded. */
import { MalformedResponse } from './response-head';

// A chunk-size line with its extensions, and all trailer lines together: a hostile server gets no further.
const maxSizeLineBytes = 1024;
const maxTrailerBytes = 16 * 1024;
const chunkSize = /^([0-9A-Fa-f]{1,13})(?:[\t ]*;.*)?$/;

type State =
  | { readonly _tag: 'size'; readonly line: string }
  | { readonly _tag: 'data'; readonly left: number }
  | { readonly _tag: 'data-end'; readonly seen: number }
  | { readonly _tag: 'trailers'; readonly line: string; readonly total: number }
  | { readonly _tag: 'done' };

/**
 * Feed it the bytes after the head with `push`; it hands each run of body bytes to `onData` (views of the bytes
 * pushed, valid only during the call) and says how many of the pushed bytes it used: fewer than pushed only once the
 * body has ended (`done`), the rest belonging to no response. Throws MalformedResponse on a bad size line, a chunk
 * not ended by CRLF, or lines past their bounds.
 */
export class ChunkedDecoder {
  private state: State = { _tag: 'size', line: '' };

  get done(): boolean {
    return this.state._tag === 'done';
  }

  push(bytes: Uint8Array, onData: (data: Uint8Array) => void): number {
    let at = 0;
    while (at < bytes.byteLength && this.state._tag !== 'done') {
      const state = this.state;
      switch (state._tag) {
        case 'data': {
          const take = Math.min(state.left, bytes.byteLength - at);
          onData(bytes.subarray(at, at + take));
          at += take;
          this.state =
            state.left === take ? { _tag: 'data-end', seen: 0 } : { _tag: 'data', left: state.left - take };
          break;
        }
        case 'data-end': {
          if (bytes[at] !== (state.seen === 0 ? 0x0d : 0x0a))
            throw new MalformedResponse('a chunk not ended by CRLF');
          at += 1;
          this.state = state.seen === 0 ? { _tag: 'data-end', seen: 1 } : { _tag: 'size', line: '' };
          break;
        }
        case 'size':
        case 'trailers': {
          const newline = bytes.indexOf(0x0a, at);
          const stop = newline < 0 ? bytes.byteLength : newline + 1;
          const line =
            state.line + Buffer.from(bytes.buffer, bytes.byteOffset + at, stop - at).toString('latin1');
          at = stop;
          this.state = newline < 0 ? this.partial(state, line) : this.lineEnded(state, line);
          break;
        }
      }
    }
    return at;
  }

  /** A line still without its LF, within its bound. */
  private partial(state: State & { readonly _tag: 'size' | 'trailers' }, line: string): State {
    if (state._tag === 'size') {
      // Bounded as a whole line is (`lineEnded`): without its CRLF, whose CR may have come already.
      if (line.length - (line.endsWith('\r') ? 1 : 0) > maxSizeLineBytes)
        throw new MalformedResponse('a chunk-size line too long');
      return { _tag: 'size', line };
    }
    if (state.total + line.length > maxTrailerBytes) throw new MalformedResponse('trailers too long');
    return { ...state, line };
  }

  private lineEnded(state: State & { readonly _tag: 'size' | 'trailers' }, line: string): State {
    if (!line.endsWith('\r\n')) throw new MalformedResponse('a chunked line not ended by CRLF');
    const text = line.slice(0, -2);
    if (state._tag === 'trailers') {
      if (text === '') return { _tag: 'done' };
      if (state.total + line.length > maxTrailerBytes) throw new MalformedResponse('trailers too long');
      return { _tag: 'trailers', line: '', total: state.total + line.length };
    }
    const size = chunkSize.exec(text);
    if (size === null || text.length > maxSizeLineBytes) throw new MalformedResponse('a bad chunk-size line');
    const bytes = parseInt(size[1]!, 16);
    return bytes === 0 ? { _tag: 'trailers', line: '', total: 0 } : { _tag: 'data', left: bytes };
  }
}
