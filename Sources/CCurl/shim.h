#ifndef LAMBDA_AUTH_CCURL_SHIM_H
#define LAMBDA_AUTH_CCURL_SHIM_H
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic macros that Swift cannot call; these
// typed wrappers are the whole bridge.
static inline CURLcode lambda_auth_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode lambda_auth_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode lambda_auth_curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode lambda_auth_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode lambda_auth_curl_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
typedef size_t (*lambda_auth_curl_write_callback)(char *, size_t, size_t, void *);
static inline CURLcode lambda_auth_curl_setopt_write_function(CURL *h, CURLoption o, lambda_auth_curl_write_callback f) { return curl_easy_setopt(h, o, f); }
static inline CURLcode lambda_auth_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
#endif
