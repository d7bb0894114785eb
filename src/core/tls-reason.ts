/**
 * tlsHandshakeReason: OpenSSL's error string of a failed handshake in words. Node hands it on as the message
 * (`40BD…:error:0A00010B:SSL routines:tls_validate_record_header:wrong version number:../deps/openssl/…/tlsany_meth.c:77:`,
 * after `write EPROTO ` from node:https), a thread id, source file and line no user can act on. Pure.
 */

/** `<thread>:error:<code>:<library>:<function>:<reason>:…`, maybe after node:net's `<syscall> EPROTO `. */
const openSslError = /^(?:\w+ EPROTO )?[0-9A-F]+:error:[0-9A-F]+:[^:\n]*:[^:\n]*:([^:\n]+)/;

/** What a reason usually means, for the reasons a misconfigured peer gives. */
const hints: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /wrong version number|packet length too long|http request|record layer failure/,
    'the server did not answer in TLS: plain HTTP on an https:// port?',
  ],
  [
    /protocol version|unsupported protocol|no protocols available|version too low/,
    'no TLS version both sides accept: modelsync needs TLS 1.2 or later',
  ],
  [/certificate required/, 'the server asks for a client certificate'],
  [
    /handshake failure|no shared cipher|no cipher/,
    'the server refused the handshake: no cipher both sides accept, or it asks for a client certificate',
  ],
];

/** `TLS handshake failed: <reason> (<hint>)` for OpenSSL's error string `message`; undefined for any other message. */
export const tlsHandshakeReason = (message: string): string | undefined => {
  const reason = openSslError.exec(message)?.[1]?.trim();
  if (reason === undefined || reason === '') return undefined;
  const hint = hints.find(([pattern]) => pattern.test(reason))?.[1];
  return `TLS handshake failed: ${reason}${hint === undefined ? '' : ` (${hint})`}`;
};

// Node's advice on a certificate no trusted CA signed, which cannot be followed: NODE_OPTIONS refuses that flag.
const nodeAdvice = /; if the root CA is installed locally, try running Node\.js with --use-system-ca\.?$/;

/**
 * A TLS failure's `message` as said to a user: OpenSSL's error string in words (`tlsHandshakeReason`), Node's advice of
 * `--use-system-ca` made `--ca-bundle`'s; undefined for a message that is neither.
 */
export const tlsReason = (message: string): string | undefined =>
  tlsHandshakeReason(message) ??
  (nodeAdvice.test(message) ? message.replace(nodeAdvice, ' (trust its CA with --ca-bundle)') : undefined);

/**
 * Whether a network error's `code` is a TLS failure: the server's certificate refused (OpenSSL's verify codes,
 * `ERR_TLS_CERT_ALTNAME_INVALID`), or the handshake itself (`ERR_SSL_*`, `EPROTO`); undefined for any other.
 */
export const tlsFailureKind = (code: string): 'certificate' | 'handshake' | undefined =>
  /CERT|SELF_SIGNED|UNABLE_TO_GET_ISSUER|UNABLE_TO_VERIFY|INVALID_CA|HOSTNAME_MISMATCH|PATH_LENGTH/.test(code)
    ? 'certificate'
    : /^ERR_SSL_|^ERR_TLS_|^EPROTO$/.test(code)
      ? 'handshake'
      : undefined;
