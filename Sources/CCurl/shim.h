#ifndef LAMBDA_AUTH_CCURL_SHIM_H
#define LAMBDA_AUTH_CCURL_SHIM_H
#include <stddef.h>
#include <stdint.h>

// libcurl is loaded with dlopen on the first HTTP request (see CurlHTTPClient.swift), so nothing
// links against it and its development headers are not needed to build: the few types and
// constants we use are declared here, with libcurl's own names and values. They are part of
// libcurl's stable ABI (curl/curl.h promises never to renumber them); Tests/Scripts/
// check-curl-constants.sh compares them with a real curl.h when one is at hand.
typedef int CURLcode;
typedef int CURLoption;
typedef int CURLINFO;
typedef int64_t curl_off_t;
typedef void CURL;
struct curl_slist;

static const CURLcode CURLE_OK = 0;
static const CURLcode CURLE_UNSUPPORTED_PROTOCOL = 1;
static const CURLcode CURLE_URL_MALFORMAT = 3;
static const CURLcode CURLE_OPERATION_TIMEDOUT = 28;
static const CURLcode CURLE_BAD_FUNCTION_ARGUMENT = 43;
static const CURLcode CURLE_UNKNOWN_OPTION = 48;
static const CURLcode CURLE_FILESIZE_EXCEEDED = 63;

static const CURLoption CURLOPT_WRITEDATA = 10001;
static const CURLoption CURLOPT_URL = 10002;
static const CURLoption CURLOPT_POSTFIELDS = 10015;
static const CURLoption CURLOPT_HTTPHEADER = 10023;
static const CURLoption CURLOPT_HEADERDATA = 10029;
static const CURLoption CURLOPT_CUSTOMREQUEST = 10036;
static const CURLoption CURLOPT_WRITEFUNCTION = 20011;
static const CURLoption CURLOPT_HEADERFUNCTION = 20079;
static const CURLoption CURLOPT_NOBODY = 44;
static const CURLoption CURLOPT_FOLLOWLOCATION = 52;
static const CURLoption CURLOPT_POSTFIELDSIZE = 60;
static const CURLoption CURLOPT_NOSIGNAL = 99;
static const CURLoption CURLOPT_TIMEOUT_MS = 155;
static const CURLoption CURLOPT_CONNECTTIMEOUT_MS = 156;
static const CURLoption CURLOPT_PROTOCOLS = 181;
static const CURLoption CURLOPT_MAXFILESIZE_LARGE = 30117;

static const long CURLPROTO_HTTP = 1;
static const long CURLPROTO_HTTPS = 2;
static const long CURL_GLOBAL_DEFAULT = 3;
static const CURLINFO CURLINFO_RESPONSE_CODE = 0x200002;

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: each typed
// wrapper makes one call with the right argument type through the function found by dlsym.
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
