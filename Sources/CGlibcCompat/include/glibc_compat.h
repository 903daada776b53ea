#ifndef LAMBDA_AUTH_GLIBC_COMPAT_H
#define LAMBDA_AUTH_GLIBC_COMPAT_H
// What `make package` routes libm's hypotf and libgcc_eh's _dl_find_object through (see
// glibc_compat.c); not for Swift callers.
float __wrap_hypotf(float x, float y);
struct dl_find_object;
int __wrap__dl_find_object(void *address, struct dl_find_object *result);

// getrandom(2), which Swift's Glibc module does not export (glibc 2.25; Amazon Linux 2023 has 2.34).
long lambda_auth_getrandom(void *buffer, unsigned long count);
#endif
