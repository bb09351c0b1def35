/* What the files of ONNX import share (model_import.c, model_import_dims.c). */
#ifndef XF_MODEL_IMPORT_H
#define XF_MODEL_IMPORT_H

#include "proto_internal.h"

typedef struct importer {
    const Onnx__ModelProto *mp;
    const Onnx__GraphProto *gp;
    const xf_load_options *opt;
    xf_model *m;
    xf_graph *g;
    xf_error *err;
    xfp_tensor_src tensors;
    xfp_name_map values;   /* name -> value id */
    xfp_name_map declared; /* name -> ValueInfoProto (index into declared_list): value_info, outputs */
    xfp_ptr_list declared_list;
    xfp_symbols syms;
    xfp_ptr_list fallback;   /* declared types xflow cannot represent (see proto_internal.h) */
    xfp_ptr_list unknown_vi; /* value_info of names that are not values */
    int *node_outs;          /* per NodeProto: first slot in out_ids; -1 for folded Constants */
    int *out_ids;
    xfp_arena inlined;       /* the graph with model-local functions inlined (model_functions.c) */
} importer;

/* model_import_opaque.c: attribute a of an opaque node (label names the
 * node in errors), kept in o where a runtime may read it. */
xf_status xfp_opaque_attr(importer *im, const char *label, const Onnx__AttributeProto *a, xf_opaque *o);

/* model_import_dims.c: the sizes a load is given for symbolic dims
 * (--input-shape overrides, --dim sizes, the shapes of tensors to be fed),
 * checked against the graph inputs and bound to the dims' symbols. */
xf_status xfp_import_bind_sizes(importer *im);
/* The --input-shape override of graph input name, or NULL. */
const xf_shape *xfp_import_override(const importer *im, const char *name);
/* The shape of the tensor to be fed to graph input i, or NULL. */
const xf_shape *xfp_import_feed_shape(const importer *im, size_t i);

#endif
