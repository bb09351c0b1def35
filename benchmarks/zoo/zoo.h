/* The model zoo: builders that write standard ONNX graphs with deterministic
 * random weights, for the bundled example, the benchmarks and the tests. */
#ifndef XF_ZOO_H
#define XF_ZOO_H

#include "xf_core.h"

typedef struct xf_zoo_entry {
    const char *name;
    const char *description;
    /* size: the input's image side, sequence length or number of steps,
     * as size_meaning says */
    xf_status (*build)(xf_model *m, int batch, int size, xf_error *err);
    int default_batch;
    int default_size;
    const char *size_meaning;
} xf_zoo_entry;

/* All models, terminated by an entry with name NULL. */
const xf_zoo_entry *xf_zoo_list(void);
const xf_zoo_entry *xf_zoo_find(const char *name);
/* Builds model `name` into a new xf_model (opset 17, shapes inferred).
 * batch <= 0 takes the model's default batch size. */
xf_status xf_zoo_build(const char *name, int batch, xf_model **out, xf_error *err);
/* The same at another input size (size <= 0: the model's default; see
 * size_meaning).  The weights depend on neither batch nor size, so a smaller
 * size runs the same layers with the same weights on less data: what tests
 * use to run the large models quickly.  A size too small for the network's
 * downsampling fails shape inference with an error naming the node. */
xf_status xf_zoo_build_sized(const char *name, int batch, int size, xf_model **out, xf_error *err);

#endif
