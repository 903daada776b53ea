// The verification layer (JOSE, JWKS, HTTP, errors, JSON) lives in its own target so that other
// services can link it without the tables; the rest of LambdaAuth, the tools and the tests see it
// as part of LambdaAuth.
@_exported import LambdaAuthVerifier
