#ifndef LAMBDA_AUTH_CCURL_SHIM_H
#define LAMBDA_AUTH_CCURL_SHIM_H
#include <curl/curl.h>

// libcurl is loaded with dlopen on the first HTTP request (see CurlHTTPClient.swift), so these
// take the function found by dlsym. curl_easy_setopt and curl_easy_getinfo are variadic, which
// Swift cannot call: each typed wrapper makes one call with the right argument type.
typedef CURLcode (*lambda_auth_curl_setopt_fn)(CURL *, CURLoption, ...);
typedef CURLcode (*lambda_auth_curl_getinfo_fn)(CURL *, CURLINFO, ...);
typedef size_t (*lambda_auth_curl_write_callback)(char *, size_t, size_t, void *);

static inline CURLcode lambda_auth_curl_setopt_long(void *fn, CURL *h, CURLoption o, long v) {
    return ((lambda_auth_curl_setopt_fn)fn)(h, o, v);
}
static inline CURLcode lambda_auth_curl_setopt_string(void *fn, CURL *h, CURLoption o, const char *v) {
    return ((lambda_auth_curl_setopt_fn)fn)(h, o, v);
}
static inline CURLcode lambda_auth_curl_setopt_pointer(void *fn, CURL *h, CURLoption o, void *v) {
    return ((lambda_auth_curl_setopt_fn)fn)(h, o, v);
}
static inline CURLcode lambda_auth_curl_setopt_slist(void *fn, CURL *h, CURLoption o, struct curl_slist *v) {
    return ((lambda_auth_curl_setopt_fn)fn)(h, o, v);
}
static inline CURLcode lambda_auth_curl_setopt_off_t(void *fn, CURL *h, CURLoption o, curl_off_t v) {
    return ((lambda_auth_curl_setopt_fn)fn)(h, o, v);
}
static inline CURLcode lambda_auth_curl_setopt_write_function(void *fn, CURL *h, CURLoption o, lambda_auth_curl_write_callback f) {
    return ((lambda_auth_curl_setopt_fn)fn)(h, o, f);
}
static inline CURLcode lambda_auth_curl_getinfo_long(void *fn, CURL *h, CURLINFO i, long *v) {
    return ((lambda_auth_curl_getinfo_fn)fn)(h, i, v);
}
#endif
