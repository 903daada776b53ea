// Keeps the shipped binaries loadable on glibc 2.34 (Lambda's provided.al2023) although they are
// linked here against a newer glibc. See docs/packaging.md, "Symbol versions".
//
// glibc 2.35 gave hypotf a new default symbol version (GLIBC_2.35) when it moved the errno
// handling into the function; the static Swift runtime's Glibc overlay calls hypotf, so a plain
// link records hypotf@GLIBC_2.35, which al2023's libm lacks, and the loader refuses the binary.
// `make package` links with `-Xlinker --wrap=hypotf`: every call then reaches __wrap_hypotf
// below instead of libm. It is glibc's own algorithm (sysdeps/ieee754/flt-32/e_hypotf.c, before
// and after 2.35): squares and sum in double, where they are exact or rounded once, then one
// square root; infinities win over NaNs. Only errno is not set on overflow, which Swift never
// reads. Without --wrap (debug builds, tests) nothing calls it.
#include "glibc_compat.h"
#include <sys/random.h>

float __wrap_hypotf(float x, float y) {
    if (__builtin_isinf(x) || __builtin_isinf(y)) return __builtin_inff();
    if (__builtin_isnan(x) || __builtin_isnan(y)) return x + y;
    double dx = x, dy = y;
    return (float)__builtin_sqrt(dx * dx + dy * dy);
}

// glibc 2.35 added _dl_find_object, and GCC 12's static unwinder (libgcc_eh, linked in place of
// libgcc_s.so: one shared library less to load at every cold start) calls it to find a frame's
// unwind tables. al2023's glibc lacks it. The shipped binaries carry no unwind tables at all
// (Infra/no-unwind-tables.ld), so the answer is always "none": the unwinder then stops, as it
// does today when libgcc_s finds no tables. Linked with `-Xlinker --wrap=_dl_find_object`.
struct dl_find_object;
int __wrap__dl_find_object(void *address, struct dl_find_object *result) {
    (void)address;
    (void)result;
    return -1;
}

long lambda_auth_getrandom(void *buffer, unsigned long count) {
    return getrandom(buffer, count, 0);
}
