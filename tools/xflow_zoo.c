/* xflow-zoo: write one of the zoo's models as ONNX. */
#include "cli.h"
#include "xf_proto.h"
#include "zoo.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: xflow-zoo NAME -o FILE.onnx [--batch N] [--external-data]\n"
    "       xflow-zoo --list\n"
    "\n"
    "Writes a benchmark model with deterministic random weights as ONNX.\n";

int main(int argc, char **argv)
{
    xf_cli_init("xflow-zoo", 1); /* usage errors name the program */
    const char *name = NULL, *out = NULL;
    long batch = 0;
    bool external = false;
    int verbosity = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--list")) {
            for (const xf_zoo_entry *e = xf_zoo_list(); e->name; e++)
                printf("%-18s %s\n", e->name, e->description);
            return 0;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            verbosity = 0;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            verbosity = 2;
        } else if (!strcmp(a, "--external-data")) {
            external = true;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc)
                return xf_cli_usage_error("%s needs a file name", a);
            out = argv[++i];
        } else if (!strcmp(a, "--batch")) {
            if (!xf_cli_parse_int(a, i + 1 < argc ? argv[i + 1] : NULL, 1, 4096, &batch))
                return 2;
            i++;
        } else if (a[0] == '-') {
            return xf_cli_usage_error("unknown option '%s'", a);
        } else if (!name) {
            name = a;
        } else {
            return xf_cli_usage_error("more than one model name ('%s' and '%s')", name, a);
        }
    }
    xf_cli_init("xflow-zoo", verbosity);
    if (!name || !out)
        return xf_cli_usage_error("need a model NAME and -o FILE.onnx");
    xf_error err;
    xf_model *m;
    if (xf_zoo_build(name, (int)batch, &m, &err) != XF_OK)
        return xf_cli_error("%s", err.msg);
    xf_save_options so = {.external_data = external, .external_threshold = 1024};
    int rc = 0;
    if (xf_model_save(m, out, &so, &err) != XF_OK)
        rc = xf_cli_error("%s", err.msg);
    else
        xf_cli_info("wrote %s: %s, %d nodes\n", out, name, m->graph->n_nodes);
    xf_model_free(m);
    return rc;
}
