/* RE2 patterns as POSIX extended expressions for glibc's regex, the
 * translation regex_ops.c compiles (regex_translate.c). */
#ifndef XF_REGEX_TRANSLATE_H
#define XF_REGEX_TRANSLATE_H

#include <stdbool.h>
#include <stddef.h>

/* RE2's \xHH and \x{H...} escapes of re written as the characters they
 * name (a new string); NULL, why set, for one that is malformed or names
 * NUL, a surrogate or a code point past U+10FFFF. */
char *xf_re_expand_hex(const char *re, char *why, size_t why_len);
/* re (no \x escapes) as a POSIX extended expression in *out (a new
 * string), its leading flags read into *icase and *multiline; false, why
 * set, when it has no POSIX form. */
bool xf_re_to_posix(const char *re, char **out, bool *icase, bool *multiline, char *why, size_t why_len);
/* A C-locale form of translated pattern posix (a new string; NULL when
 * out of memory or, with sets, when there is none): see regex_translate.c. */
char *xf_re_c_form(const char *posix, bool sets, bool icase);
/* Whether translated pattern posix has \b or \B. */
bool xf_re_has_boundary(const char *posix);

#endif
