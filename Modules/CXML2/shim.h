#ifndef PODFS_CXML2_SHIM_H
#define PODFS_CXML2_SHIM_H
/* Debian builds libxml2 with ICU; its UErrorCode clashes with Foundation's
   copy in the same module graph. Nothing here needs ICU. */
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/uri.h>
#include <libxml/HTMLparser.h>
#endif
