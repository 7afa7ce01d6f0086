#ifndef PODFS_CCURL_SHIM_H
#define PODFS_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic;
   Swift calls them through these typed wrappers. */
static inline CURLcode podfs_curl_easy_setopt_long(CURL *h, CURLoption o, long v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode podfs_curl_easy_setopt_ptr(CURL *h, CURLoption o, void *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode podfs_curl_easy_setopt_str(CURL *h, CURLoption o, const char *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode podfs_curl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) {
    return curl_easy_setopt(h, o, v);
}
typedef size_t (*podfs_curl_data_cb)(char *, size_t, size_t, void *);
static inline CURLcode podfs_curl_easy_setopt_datacb(CURL *h, CURLoption o, podfs_curl_data_cb f) {
    return curl_easy_setopt(h, o, f);
}
static inline CURLcode podfs_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode podfs_curl_easy_getinfo_str(CURL *h, CURLINFO i, char **v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode podfs_curl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLMcode podfs_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}
#endif
