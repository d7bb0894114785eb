/**
 * The user container's readiness probe as KServe hands it to its agent: `SERVING_READINESS_PROBE`, the JSON of a
 * Kubernetes `corev1.Probe` (a JSON array of them under `ENABLE_MULTI_CONTAINER_PROBES=true`), decoded into what
 * modelsync runs. Pure; every problem names the field as the JSON spells it.
 */
import { sequenceS } from 'fp-ts/Apply';
import * as E from 'fp-ts/Either';
import { pipe } from 'fp-ts/function';
import { describeJsonProblem, parseJson } from './json/json';
import { isJsonObject } from './json/json-object';
import { headerNamePattern } from './storage-uri';

/** An httpGet or a tcpSocket check of one port. */
export type ProbeAction =
  | {
      readonly kind: 'http';
      readonly scheme: 'http' | 'https';
      readonly host: string;
      readonly port: number;
      /** Always starting with `/`, the query kept. */
      readonly path: string;
      readonly headers: ReadonlyArray<readonly [string, string]>;
    }
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number };

/** One probe: its action, the time one attempt may take, and how it is repeated. */
export interface ContainerProbe {
  readonly action: ProbeAction;
  readonly timeoutMs: number;
  /**
   * 0 (absent): Knative's aggressive probing, attempts every 50 ms for up to 10 s until `successThreshold` pass
   * in a row; else one attempt per readiness check.
   */
  readonly periodSeconds: number;
  readonly successThreshold: number;
  /** Kept for the record: the kubelet applies its own threshold to the agent's probe, as with KServe's agent. */
  readonly failureThreshold: number;
}

/** Where an unset host points: the pod's own network namespace. */
export const probeLocalHost = '127.0.0.1';

/** The probe when KServe gives none: the model server's port accepts a connection. */
export const componentPortProbe = (componentPort: number): ContainerProbe => ({
  action: { kind: 'tcp', host: probeLocalHost, port: componentPort },
  timeoutMs: 1000,
  periodSeconds: 1,
  successThreshold: 1,
  failureThreshold: 3,
});

type Decoded<T> = E.Either<string, T>;

/** Decoded fields as one record, or the first Left in field order. */
const allOf = sequenceS(E.Apply);

const wholeIn = (value: unknown, field: string, min: number, max: number, absent: number): Decoded<number> =>
  value === undefined || value === null
    ? E.right(absent)
    : typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max
      ? E.right(value)
      : E.left(`${field}: expected a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);

const textOr = (value: unknown, field: string, absent: string): Decoded<string> =>
  value === undefined || value === null || value === ''
    ? E.right(absent)
    : typeof value === 'string'
      ? E.right(value)
      : E.left(`${field}: expected a string, got ${JSON.stringify(value)}`);

/**
 * An IntOrString port: a number, or a number's text, or a port's name, which names a port of the user container;
 * KServe's agent would dial the name as a service, so the one port it can mean here is the component port.
 */
const portOf = (value: unknown, field: string, componentPort: number): Decoded<number> => {
  if (typeof value === 'string' && /^\d+$/.test(value)) return portOf(Number(value), field, componentPort);
  if (typeof value === 'string' && /^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/.test(value))
    return E.right(componentPort);
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65_535
    ? E.right(value)
    : E.left(`${field}: expected a port number from 1 to 65535 or a port name, got ${JSON.stringify(value)}`);
};

/** HTTP header values a request may carry (no CR, LF or NUL: nothing can be smuggled into the head). */
const headerValue = /^[\t\x20-\x7e\x80-\xff]*$/;

const headersOf = (value: unknown, field: string): Decoded<ReadonlyArray<readonly [string, string]>> => {
  if (value === undefined || value === null) return E.right([]);
  if (!Array.isArray(value)) return E.left(`${field}: expected a list of {name, value}`);
  const headers: Array<readonly [string, string]> = [];
  for (const [index, entry] of value.entries()) {
    const name: unknown = isJsonObject(entry) ? entry.name : undefined;
    const text: unknown = isJsonObject(entry) ? (entry.value ?? '') : undefined;
    if (
      typeof name !== 'string' ||
      !headerNamePattern.test(name) ||
      typeof text !== 'string' ||
      !headerValue.test(text)
    )
      return E.left(`${field}[${index}]: expected {name, value}: a header name and a one-line value`);
    headers.push([name, text]);
  }
  return E.right(headers);
};

const actionOf = (
  probe: Readonly<Record<string, unknown>>,
  at: string,
  componentPort: number,
): Decoded<ProbeAction> => {
  const { httpGet, tcpSocket } = probe;
  if (isJsonObject(httpGet)) {
    const field = `${at}httpGet`;
    const scheme = textOr(httpGet.scheme, `${field}.scheme`, 'HTTP');
    if (E.isRight(scheme) && !['HTTP', 'HTTPS'].includes(scheme.right.toUpperCase()))
      return E.left(`${field}.scheme: expected HTTP or HTTPS, got ${JSON.stringify(scheme.right)}`);
    const path = textOr(httpGet.path, `${field}.path`, '/');
    if (E.isRight(path) && /[\s\0]/.test(path.right))
      return E.left(`${field}.path: expected a URL path with no spaces or control characters`);
    return pipe(
      allOf({
        scheme,
        path,
        host: textOr(httpGet.host, `${field}.host`, probeLocalHost),
        port: portOf(httpGet.port, `${field}.port`, componentPort),
        headers: headersOf(httpGet.httpHeaders, `${field}.httpHeaders`),
      }),
      E.map(({ scheme, path, ...rest }): ProbeAction => ({
        kind: 'http',
        scheme: scheme.toUpperCase() === 'HTTPS' ? 'https' : 'http',
        path: `/${path.replace(/^\/+/, '')}`,
        ...rest,
      })),
    );
  }
  if (isJsonObject(tcpSocket)) {
    const field = `${at}tcpSocket`;
    return pipe(
      allOf({
        host: textOr(tcpSocket.host, `${field}.host`, probeLocalHost),
        port: portOf(tcpSocket.port, `${field}.port`, componentPort),
      }),
      E.map(({ host, port }): ProbeAction => ({ kind: 'tcp', host, port })),
    );
  }
  const other = ['exec', 'grpc'].find((kind) => probe[kind] !== undefined && probe[kind] !== null);
  return E.left(
    other !== undefined
      ? `${at}${other}: ${other} probes are not supported (KServe's agent takes httpGet and tcpSocket only)`
      : `${at.replace(/\.$/, '') || 'the probe'}: expected httpGet or tcpSocket`,
  );
};

const probeOf = (value: unknown, at: string, componentPort: number): Decoded<ContainerProbe> => {
  if (!isJsonObject(value))
    return E.left(`${at.replace(/\.$/, '') || 'the probe'}: expected an object (a corev1.Probe)`);
  const action = actionOf(value, at, componentPort);
  if (E.isLeft(action)) return action;
  return pipe(
    allOf({
      timeout: wholeIn(value.timeoutSeconds, `${at}timeoutSeconds`, 0, 3600, 1),
      period: wholeIn(value.periodSeconds, `${at}periodSeconds`, 0, 3600, 0),
      success: wholeIn(value.successThreshold, `${at}successThreshold`, 0, 1000, 1),
      failure: wholeIn(value.failureThreshold, `${at}failureThreshold`, 0, 1000, 3),
    }),
    E.map(({ timeout, period, success, failure }) => ({
      action: action.right,
      // 0 means "the Kubernetes default" wherever the API server did not fill it in.
      timeoutMs: (timeout || 1) * 1000,
      periodSeconds: period,
      successThreshold: success || 1,
      failureThreshold: failure || 3,
    })),
  );
};

/** The most text taken from the env var: a Probe's JSON is a few hundred bytes; an env var can be a megabyte. */
export const maxProbeJsonChars = 64 * 1024;

/**
 * The probes `text` describes (`[]` for an empty text: no user probe); the model server's port names a probe's
 * named port. A JSON object is one probe, a JSON array several, which must all pass; the Left names the field.
 */
export const decodeReadinessProbes = (
  text: string,
  componentPort: number,
): Decoded<ReadonlyArray<ContainerProbe>> => {
  if (text.trim() === '') return E.right([]);
  if (text.length > maxProbeJsonChars) return E.left(`longer than ${maxProbeJsonChars} characters`);
  const json = parseJson(text);
  if (E.isLeft(json)) return E.left(describeJsonProblem(json.left));
  const list = Array.isArray(json.right) ? json.right : [json.right];
  const at = (index: number): string => (Array.isArray(json.right) ? `[${index}].` : '');
  return E.traverseReadonlyArrayWithIndex((index, value) => probeOf(value, at(index), componentPort))(list);
};
