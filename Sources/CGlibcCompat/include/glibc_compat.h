#ifndef LAMBDA_AUTH_GLIBC_COMPAT_H
#define LAMBDA_AUTH_GLIBC_COMPAT_H
// What `make package` routes libm's hypotf through (see glibc_compat.c); not for Swift callers.
float __wrap_hypotf(float x, float y);
#endif
