/// The sample web app's JavaScript module, served at `/demo/demo.js` and written to be copied
/// (docs/web.md walks through it): `fetch` for the API, `navigator.credentials` for passkeys,
/// and the base64url conversions WebAuthn's JSON needs, in plain sight.
enum DemoScript {
    static let module = #"""
// lambda-auth web sample: sign in (dev identity provider, email code, passkey), show the user and
// its sessions, refresh, sign out. Point API at your deployment's URL when you copy it.
const API = new URLSearchParams(location.search).get('api') ?? location.origin;
const DEVICE = { platform: 'web', name: 'lambda-auth web demo' };
const STORAGE_KEY = 'lambda-auth.tokens';

// A tab's tokens survive a reload in sessionStorage. A production app keeps the refresh token out
// of reach of page scripts where it can (docs/web.md).
let tokens = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null');
function keepTokens(next) {
  tokens = next;
  if (next) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
  else sessionStorage.removeItem(STORAGE_KEY);
}
export function signedIn() { return tokens !== null; }

// Every error body is {"error": {"code", "message", "status", "retryable"}}: code is what to branch on.
export class APIError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code ?? `HTTP_${status}`;
  }
}

async function call(path, { method = 'POST', body, withAccessToken = false } = {}) {
  const headers = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (withAccessToken) headers.authorization = `Bearer ${tokens?.accessToken}`;
  const response = await fetch(API + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await response.json().catch(() => null);
  if (!response.ok) throw new APIError(response.status, answer);
  return answer;
}

// WebAuthn hands out ArrayBuffers; the API's JSON carries them as base64url (RFC 4648 section 5:
// '-' and '_' instead of '+' and '/', no '=' padding).
export function bytesFromBase64url(text) {
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/');
  const padded = base64 + '='.repeat((4 - (base64.length % 4)) % 4);
  return Uint8Array.from(atob(padded), (character) => character.charCodeAt(0));
}
export function base64urlFromBytes(buffer) {
  let binary = '';
  for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// A PublicKeyCredential as the API's JSON (RegistrationResponseJSON or AuthenticationResponseJSON):
// `response` holds the ceremony's own fields, already base64url.
function credentialJSON(credential, response) {
  return {
    id: credential.id,
    rawId: base64urlFromBytes(credential.rawId),
    type: credential.type,
    clientExtensionResults: credential.getClientExtensionResults(),
    response,
  };
}

async function signIn(request) {
  const answer = await call('/auth/signin', { body: { ...request, device: DEVICE } });
  keepTokens(answer.tokens);
  return answer;
}

// The dev identity provider (serve's dev defaults only) mints the ID token Google's SDK would give.
export async function signInWithDevProvider(subject, email, name) {
  const { idToken } = await call('/dev/idp/google/token', { body: { sub: subject, email, name } });
  return signIn({ provider: 'google', idToken });
}

export async function sendEmailCode(email) {
  return call('/auth/otp/start', { body: { email } });
}
export async function signInWithEmailCode(email, code) {
  return signIn({ provider: 'email', email, code });
}

// Registers a passkey for the signed-in user: options from the API, the browser's ceremony, the
// credential back as RegistrationResponseJSON.
export async function registerPasskey(name) {
  const { publicKey } = await call('/auth/passkey', { body: { action: 'register-options' }, withAccessToken: true });
  const credential = await navigator.credentials.create({
    publicKey: {
      ...publicKey,
      challenge: bytesFromBase64url(publicKey.challenge),
      user: { ...publicKey.user, id: bytesFromBase64url(publicKey.user.id) },
      excludeCredentials: (publicKey.excludeCredentials ?? []).map((known) => ({ ...known, id: bytesFromBase64url(known.id) })),
    },
  });
  const registration = credentialJSON(credential, {
    clientDataJSON: base64urlFromBytes(credential.response.clientDataJSON),
    attestationObject: base64urlFromBytes(credential.response.attestationObject),
    transports: credential.response.getTransports?.() ?? [],
  });
  return call('/auth/passkey', { body: { action: 'register', credential: registration, name }, withAccessToken: true });
}

// Signs in with any passkey of this site (a discoverable credential: no user name typed).
export async function signInWithPasskey() {
  const { publicKey } = await call('/auth/passkey', { body: { action: 'login-options' } });
  const credential = await navigator.credentials.get({
    publicKey: {
      ...publicKey,
      challenge: bytesFromBase64url(publicKey.challenge),
      allowCredentials: (publicKey.allowCredentials ?? []).map((known) => ({ ...known, id: bytesFromBase64url(known.id) })),
    },
  });
  const assertion = credentialJSON(credential, {
    clientDataJSON: base64urlFromBytes(credential.response.clientDataJSON),
    authenticatorData: base64urlFromBytes(credential.response.authenticatorData),
    signature: base64urlFromBytes(credential.response.signature),
    userHandle: credential.response.userHandle ? base64urlFromBytes(credential.response.userHandle) : null,
  });
  return signIn({ provider: 'passkey', credential: assertion });
}

// A new access token (and refresh token: each is used once). A revoked session answers
// REFRESH_TOKEN_REVOKED: the user must sign in again.
export async function refresh() {
  try {
    const answer = await call('/auth/refresh', { body: { refreshToken: tokens?.refreshToken } });
    keepTokens(answer.tokens);
    return answer;
  } catch (error) {
    if (error.code === 'REFRESH_TOKEN_REVOKED' || error.code === 'REFRESH_TOKEN_EXPIRED') keepTokens(null);
    throw error;
  }
}

export async function sessions() {
  return (await call('/auth/sessions', { method: 'GET', withAccessToken: true })).sessions;
}

// What the app's own API sees of the caller (serve's /example/whoami): the verified claims.
export async function whoAmI() {
  return call('/example/whoami', { method: 'GET', withAccessToken: true });
}

// scope: 'session' (this device) or 'global' (every device of the user).
export async function signOut(scope = 'session') {
  try {
    return await call('/auth/signout', { body: { refreshToken: tokens?.refreshToken, scope } });
  } finally {
    keepTokens(null);
  }
}

// The page: each button calls one function above and shows what came back.
const $ = (id) => document.getElementById(id);
function show(text, failed = false) {
  $('status').textContent = text;
  $('status').className = failed ? 'failed' : 'ok';
}
async function render(user) {
  $('signed-in').hidden = !signedIn();
  $('signed-out').hidden = signedIn();
  if (!signedIn()) return;
  if (user) $('user').textContent = JSON.stringify(user, null, 2);
  const list = $('sessions');
  list.replaceChildren();
  for (const session of await sessions()) {
    const item = document.createElement('li');
    item.textContent = `${session.id}${session.current ? ' (this tab)' : ''}, last active ${session.lastActiveAt}`;
    list.append(item);
  }
}
function action(id, run) {
  $(id).addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      show(await run(new FormData(event.target)) ?? 'Done.');
    } catch (error) {
      show(`${error.code ?? error.name}: ${error.message}`, true);
    }
  });
}

if (typeof document !== 'undefined' && $('status')) {
  action('dev-form', async (form) => {
    const answer = await signInWithDevProvider(form.get('subject'), form.get('email'), form.get('name'));
    await render(answer.user);
    return `Signed in as ${answer.user.id}.`;
  });
  action('code-form', async (form) => {
    await sendEmailCode(form.get('email'));
    $('code-entry').hidden = false;
    $('code').focus();
    return 'Code sent: read it from the outbox.';
  });
  action('code-entry', async (form) => {
    const answer = await signInWithEmailCode($('code-email').value, form.get('code'));
    await render(answer.user);
    return `Signed in as ${answer.user.id}.`;
  });
  action('passkey-form', async () => {
    const answer = await signInWithPasskey();
    await render(answer.user);
    return `Signed in with a passkey as ${answer.user.id}.`;
  });
  action('register-form', async (form) => {
    const answer = await registerPasskey(form.get('passkey-name'));
    return `Passkey registered: ${answer.passkey.id}.`;
  });
  action('refresh-form', async () => {
    const answer = await refresh().catch(async (error) => { await render(); throw error; });
    await render(answer.user);
    return 'Refreshed.';
  });
  action('whoami-form', async () => JSON.stringify(await whoAmI(), null, 2));
  action('signout-form', async () => { await signOut('session'); await render(); return 'Signed out.'; });
  action('signout-all-form', async () => { const answer = await signOut('global'); await render(); return `Signed out everywhere (${answer.revokedSessions} sessions).`; });
  render().catch((error) => show(`${error.code ?? error.name}: ${error.message}`, true));
}
"""#
}
