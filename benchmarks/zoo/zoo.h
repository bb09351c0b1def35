/* The model zoo: builders that write standard ONNX graphs with deterministic
 * random weights, for the bundled example, the benchmarks and the tests. */
#ifndef XF_ZOO_H
#define XF_ZOO_H

#include "xf_core.h"

typedef struct xf_zoo_entry {
    const char *name;
    const char *description;
    xf_status (*build)(xf_model *m, int batch, xf_error *err);
    int default_batch;
} xf_zoo_entry;

/* All models, terminated by an entry with name NULL. */
const xf_zoo_entry *xf_zoo_list(void);
const xf_zoo_entry *xf_zoo_find(const char *name);
/* Builds model `name` into a new xf_model (opset 17, shapes inferred).
 * batch <= 0 takes the model's default batch size. */
xf_status xf_zoo_build(const char *name, int batch, xf_model **out, xf_error *err);

#endif
