/* A nesting-depth check on protobuf bytes before they are unpacked.
 *
 * protobuf-c unpacks nested messages by recursion, so bytes that nest
 * messages a few hundred thousand levels deep (a subgraph attribute holding
 * a graph holding a node holding a subgraph ...) overflow the stack.  This
 * walks the wire format iteratively, guided by the message descriptors, and
 * refuses input that nests deeper than a limit no real model approaches. */
#include "proto_internal.h"

#include <stdlib.h>

typedef struct frame {
    size_t end;
    const ProtobufCMessageDescriptor *desc;
} frame;

static bool read_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *pos < len; shift += 7) {
        uint8_t b = buf[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

xf_status xfp_check_depth(const void *bytes, size_t len, const ProtobufCMessageDescriptor *desc, int max_depth,
                          xf_error *err)
{
    const uint8_t *buf = bytes;
    frame *stack = malloc(sizeof *stack * (size_t)(max_depth + 1));
    if (!stack)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    int depth = 0;
    stack[0] = (frame){len, desc};
    size_t pos = 0;
    xf_status s = XF_OK;
    while (s == XF_OK) {
        while (depth > 0 && pos >= stack[depth].end)
            depth--;
        if (depth == 0 && pos >= len)
            break;
        uint64_t key, n;
        /* Malformed wire data is left for the real parser to report. */
        if (!read_varint(buf, len, &pos, &key))
            break;
        unsigned wire = (unsigned)(key & 7);
        if (wire == 0) {
            if (!read_varint(buf, len, &pos, &n))
                break;
        } else if (wire == 1 || wire == 5) {
            pos += wire == 1 ? 8 : 4;
        } else if (wire == 2) {
            if (!read_varint(buf, len, &pos, &n) || n > stack[depth].end - pos)
                break;
            const ProtobufCFieldDescriptor *f =
                key >> 3 <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(stack[depth].desc, (unsigned)(key >> 3))
                    : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth == max_depth) {
                    s = xf_error_set(err, XF_ERR_LIMIT,
                                     "not a model xflow will read: messages are nested more than %d levels deep",
                                     max_depth);
                    break;
                }
                stack[++depth] = (frame){pos + (size_t)n, f->descriptor};
            } else {
                pos += (size_t)n;
            }
        } else {
            break;
        }
    }
    free(stack);
    return s;
}
