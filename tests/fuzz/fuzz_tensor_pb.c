/* libFuzzer harness: TensorProto files (the --input files of xflow-run and
 * the ONNX test data). */
#include "xf_proto.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    xf_error err;
    xf_tensor *t = NULL;
    char *name = NULL;
    if (xf_tensor_load_pb_buffer(data, size, NULL, &t, &name, &err) == XF_OK) {
        if (xf_tensor_numel(t) > 0 && t->dtype != XF_DT_STRING && !t->data)
            abort(); /* a tensor with elements must have its bytes */
        xf_tensor_release(t);
        free(name);
    }
    return 0;
}
