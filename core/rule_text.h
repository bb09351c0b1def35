/* What the library printer (rule_format.c) and parser (rule_parse.c)
 * share: the spellings of enumerated attribute values and comparisons, and
 * what counts as a name. */
#ifndef XF_RULE_TEXT_H
#define XF_RULE_TEXT_H

#include <ctype.h>
#include <stdbool.h>

static const char *const rule_activation_names[] = {"none", "relu", "sigmoid", "tanh"};
static const char *const rule_auto_pad_names[] = {"notset", "valid", "same_upper", "same_lower"};
static const char *const rule_cmp_names[] = {"==", "!=", "<", "<=", "odd"};

/* Rule, input and parameter names: a letter or '_', then letters, digits,
 * '_' or '.'. */
static inline bool rule_is_identifier(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.'))
            return false;
    return true;
}

#endif
