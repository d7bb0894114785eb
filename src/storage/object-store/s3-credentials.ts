/** s3Credentials: where S3 requests get their credentials — none (anonymous), the environment, or the AWS default chain re-read when its files change; every value hidden as a secret. */
import type { Env } from '../../core/env';
import type { Agent } from 'node:https';
import path from 'node:path';
import type { AwsCredentialIdentity as AwsCredentials } from '@smithy/types';
import { registerSecret } from '../../core/redact';
import { homeDir } from '../../fs';
import { lazyModule } from '../../core/lazy-module';
import { s3RequestHandler } from './s3-range-handler';
import { credentialsFileVersion } from './credentials-file';

// Loaded at the first use of the AWS chain (lazy-module.ts).
const awsCredentialChain = lazyModule(
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  () => require('@aws-sdk/credential-provider-node') as typeof import('@aws-sdk/credential-provider-node'),
);

/** Credentials for each request; `memoized` tells the SDK not to cache them itself (we re-read their files). */
export type CredentialSource = (() => Promise<AwsCredentials>) & { readonly memoized: true };

/** How S3 requests are signed: not at all (a public bucket), or with the credentials a source gives. */
export type S3Credentials = 'anonymous' | CredentialSource;

/** Hides every part of `credentials` in logs, statuses and errors from now on. */
const registered = (credentials: AwsCredentials): AwsCredentials => {
  for (const value of [credentials.accessKeyId, credentials.secretAccessKey, credentials.sessionToken]) {
    if (value !== undefined) registerSecret(value);
  }
  return credentials;
};

const asSource = (get: () => Promise<AwsCredentials>): CredentialSource =>
  Object.assign(get, { memoized: true as const });

/**
 * The AWS default credential chain (environment, SSO, web identity / IRSA, shared credentials and config files,
 * container and instance roles) with the file names, profile and role of `env`, made anew whenever the shared
 * credentials or config file changes (a rotated Secret mounted there): the SDK alone would keep the first
 * credentials it read from a file until the process ends.
 */
const defaultChain = (env: Env, recheckMs: number, agent: (() => Agent) | undefined) => {
  const home = homeDir(env) ?? '~';
  const filepath = env.AWS_SHARED_CREDENTIALS_FILE ?? path.join(home, '.aws', 'credentials');
  const configFilepath = env.AWS_CONFIG_FILE ?? path.join(home, '.aws', 'config');
  const init = {
    filepath,
    configFilepath,
    ignoreCache: true,
    ...(env.AWS_PROFILE !== undefined ? { profile: env.AWS_PROFILE } : {}),
    ...(env.AWS_WEB_IDENTITY_TOKEN_FILE !== undefined
      ? { webIdentityTokenFile: env.AWS_WEB_IDENTITY_TOKEN_FILE }
      : {}),
    ...(env.AWS_ROLE_ARN !== undefined ? { roleArn: env.AWS_ROLE_ARN } : {}),
    ...(env.AWS_ROLE_SESSION_NAME !== undefined ? { roleSessionName: env.AWS_ROLE_SESSION_NAME } : {}),
  };
  // The chain's STS and SSO clients (web identity, a profile's role) on the Network's connections: its proxy. Made
  // with the chain, at the first s3:// download: the handler loads the SDK's HTTP layer.
  const clientConfig = lazyModule(() =>
    agent !== undefined ? { clientConfig: { requestHandler: s3RequestHandler({ agent }) } } : {},
  );
  let chain: (() => Promise<AwsCredentials>) | undefined;
  let seen: string | undefined;
  // On the clock that never steps: NTP setting the wall clock back must not put the next look off for as long.
  let checkedAt = 0;
  return asSource(async () => {
    if (chain === undefined || performance.now() - checkedAt >= recheckMs) {
      checkedAt = performance.now();
      const tokenFile = env.AWS_WEB_IDENTITY_TOKEN_FILE;
      // Each file must be one the SDK may read whole (credentialsFileVersion); a missing one is the SDK's to skip.
      const files = [filepath, configFilepath, ...(tokenFile ? [tokenFile] : [])];
      const now = (await Promise.all(files.map((file) => credentialsFileVersion(file, 'AWS')))).join('|');
      if (chain === undefined || now !== seen) {
        seen = now;
        chain = awsCredentialChain().defaultProvider({ ...init, ...clientConfig() });
      }
    }
    return registered(await chain());
  });
};

/**
 * The credentials S3 requests use. `anonymous` (`--s3-anonymous`, KServe's `awsAnonymousCredential=true`): none.
 * `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (with `AWS_SESSION_TOKEN`) in `env`: those. Otherwise the
 * AWS default chain, re-read when its files change, checked at most every `recheckMs` (default 1 s: a request costs
 * no more than one look), its own requests (STS) through `agent` when given. Every value is registered as a secret
 * when read.
 */
export const s3Credentials = (
  settings: { readonly anonymous: boolean; readonly recheckMs?: number; readonly agent?: () => Agent },
  env: Env,
): S3Credentials => {
  if (settings.anonymous) return 'anonymous';
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (accessKeyId && secretAccessKey !== undefined) {
    const token = env.AWS_SESSION_TOKEN;
    const fixed = registered({ accessKeyId, secretAccessKey, ...(token ? { sessionToken: token } : {}) });
    return asSource(() => Promise.resolve(fixed));
  }
  return defaultChain(env, settings.recheckMs ?? 1000, settings.agent);
};
