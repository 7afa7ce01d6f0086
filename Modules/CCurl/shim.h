#ifndef PODFS_CCURL_SHIM_H
#define PODFS_CCURL_SHIM_H
#include <curl/curl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

/* The network thread's wake-up: an eventfd polled beside libcurl's sockets
   (EFD_* are macros Swift cannot import). */
static inline int podfs_wakeup_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

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
/* HTTP Basic as `user`, with `password`, or with the password of the
   matching ~/.netrc entry when `password` is NULL (CURLAUTH_BASIC is a
   macro Swift cannot import). */
static inline CURLcode podfs_curl_easy_set_basic_auth(CURL *h, const char *user, const char *password) {
    CURLcode code = curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    if (code == CURLE_OK) code = curl_easy_setopt(h, CURLOPT_USERNAME, user);
    if (code == CURLE_OK && password != NULL) code = curl_easy_setopt(h, CURLOPT_PASSWORD, password);
    if (code == CURLE_OK && password == NULL) code = curl_easy_setopt(h, CURLOPT_NETRC, (long)CURL_NETRC_OPTIONAL);
    return code;
}
static inline CURLMcode podfs_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}

/* One part of `url` (CURLUPART_HOST: the host a transfer connects to),
   read by libcurl's own URL parser with the flags a transfer uses (so
   userinfo, percent-encoding and IPv4 notations are read exactly as
   libcurl reads them); NULL when libcurl refuses the URL or it has no such
   part. Free the result with curl_free. */
static inline char *podfs_curl_url_part(const char *url, CURLUPart part) {
    CURLU *handle = curl_url();
    char *value = NULL;
    if (handle == NULL) return NULL;
    if (curl_url_set(handle, CURLUPART_URL, url, CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK
        || curl_url_get(handle, part, &value, 0) != CURLUE_OK) {
        value = NULL;
    }
    curl_url_cleanup(handle);
    return value;
}

/* The address-zone rule (HTTPClient's AddressPolicy) is applied where
   libcurl opens a socket and again before each request goes out on a new
   or reused connection. */
typedef curl_socket_t (*podfs_curl_opensocket_cb)(void *, curlsocktype, struct curl_sockaddr *);
static inline CURLcode podfs_curl_easy_setopt_opensocketcb(CURL *h, podfs_curl_opensocket_cb f) {
    return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, f);
}
typedef int (*podfs_curl_prereq_cb)(void *, char *, char *, int, int);
static inline CURLcode podfs_curl_easy_setopt_prereqcb(CURL *h, podfs_curl_prereq_cb f) {
    return curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, f);
}
/* Copies the IP address libcurl is about to connect to into `out` (16
   bytes of room); returns 4 or 16, or 0 for another family. */
static inline int podfs_curl_sockaddr_ip(const struct curl_sockaddr *a, unsigned char *out) {
    if (a->family == AF_INET) {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)(const void *)&a->addr;
        memcpy(out, &in4->sin_addr, 4);
        return 4;
    }
    if (a->family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)&a->addr;
        memcpy(out, &in6->sin6_addr, 16);
        return 16;
    }
    return 0;
}
/* What libcurl does without an open-socket callback (plus close-on-exec). */
static inline curl_socket_t podfs_curl_open_socket(const struct curl_sockaddr *a) {
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}
#endif
