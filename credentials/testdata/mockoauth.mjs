// A real OAuth 2.0 authorisation server for the credentials tests: the npm
// oauth2-mock-server (authorization code with PKCE, refresh tokens), with
// hooks making it strict where the tests need it.
//
//   node mockoauth.mjs MODULE_DIR MODE
//
// MODULE_DIR is node_modules/oauth2-mock-server; MODE is one of
//   ok              approve every sign-in
//   decline         answer /authorize with error=access_denied
//   refuse-refresh  refuse every refresh_token grant (invalid_grant)
// It prints {"port": N} on one line once listening, and stops when its
// standard input closes.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [dir, mode] = process.argv.slice(2);
const { OAuth2Server, Events } = await import(pathToFileURL(path.join(dir, 'dist', 'index.mjs')).href);

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');

// PKCE S256 is required: a challenge of another method, or none, is refused.
server.service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
  const q = new URL(req.url, 'http://x').searchParams;
  const u = redirect.url;
  if (mode === 'decline') {
    u.searchParams.delete('code');
    u.searchParams.set('error', 'access_denied');
    return;
  }
  if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) {
    u.searchParams.delete('code');
    u.searchParams.set('error', 'invalid_request');
  }
});

server.service.on(Events.BeforeResponse, (response, req) => {
  const body = req.body || {};
  if (body.grant_type === 'authorization_code' && !body.code_verifier) {
    response.statusCode = 400;
    response.body = { error: 'invalid_request', error_description: 'code_verifier required' };
    return;
  }
  if (body.grant_type === 'refresh_token' && mode === 'refuse-refresh') {
    response.statusCode = 400;
    response.body = { error: 'invalid_grant', error_description: 'refresh token ' + body.refresh_token + ' revoked' };
  }
});

await server.start(0, '127.0.0.1');
const port = server.address().port;
process.stdout.write(JSON.stringify({ port }) + '\n');
process.stdin.resume();
process.stdin.on('end', async () => {
  await server.stop();
  process.exit(0);
});
