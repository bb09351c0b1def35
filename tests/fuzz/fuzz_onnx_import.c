/* libFuzzer harness: ONNX import of arbitrary ModelProto bytes.  Whatever
 * loads must also export, and the export must load again. */
#include "xf_proto.h"

#include <stdlib.h>

static void quiet(int level, const char *msg, void *user)
{
    (void)level;
    (void)msg;
    (void)user;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    xf_log_set(quiet, NULL, XF_LOG_WARN);
    /* Small limits keep each execution fast and make "absurd size" inputs
     * take the refusal path rather than allocating. */
    xf_load_options opt = {.max_tensor_bytes = 1 << 24};
    xf_error err;
    xf_model *m = NULL;
    if (xf_model_load_buffer(data, size, NULL, &opt, &m, &err) != XF_OK)
        return 0;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (xf_model_save_buffer(m, &buf, &len, &err) == XF_OK) {
        xf_model *back = NULL;
        if (xf_model_load_buffer(buf, len, NULL, &opt, &back, &err) != XF_OK)
            abort(); /* xflow wrote a model it cannot read back */
        xf_model_free(back);
        free(buf);
    }
    xf_model_free(m);
    return 0;
}
