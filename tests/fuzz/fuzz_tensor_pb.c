/* libFuzzer harness: TensorProto files (the --input files of xflow-run and
 * the ONNX test data), and the same bytes read as SequenceProto,
 * OptionalProto and MapProto files. */
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
    /* the same bytes as the other files a value may be read from */
    xf_status (*const readers[])(const void *, size_t, const char *, xf_tensor **, xf_error *) = {
        xf_sequence_load_pb_buffer, xf_optional_load_pb_buffer, xf_map_load_pb_buffer};
    for (size_t i = 0; i < sizeof readers / sizeof *readers; i++) {
        t = NULL;
        if (readers[i](data, size, NULL, &t, &err) == XF_OK) {
            if (t->is_map && xf_tensor_numel(t->items[0]) != xf_tensor_numel(t->items[1]))
                abort(); /* a key per value */
            xf_tensor_release(t);
        }
    }
    return 0;
}
