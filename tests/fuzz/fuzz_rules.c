/* libFuzzer harness: the substitution-library parser.  Whatever parses must
 * print and parse back to the same text. */
#include "xf_rule.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    xf_error err;
    xf_library *lib = NULL;
    if (xf_library_parse((const char *)data, size, "fuzz.rules", &lib, &err) != XF_OK)
        return 0;
    char *text = NULL, *again = NULL;
    size_t len = 0, len2 = 0;
    if (xf_library_format(lib, &text, &len, &err) == XF_OK) {
        xf_library *back = NULL;
        if (xf_library_parse(text, len, "formatted.rules", &back, &err) != XF_OK)
            abort(); /* the printer wrote what the parser refuses */
        if (xf_library_format(back, &again, &len2, &err) != XF_OK || len2 != len || memcmp(text, again, len))
            abort(); /* print -> parse -> print is not stable */
        xf_library_free(back);
    }
    free(text);
    free(again);
    xf_library_free(lib);
    return 0;
}
