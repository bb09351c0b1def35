/* The model builders behind the zoo's registry (zoo.c), one file per family. */
#ifndef XF_ZOO_MODELS_H
#define XF_ZOO_MODELS_H

#include "xf_core.h"

/* zoo_cnn.c */
xf_status xf_zoo_build_resnet50(xf_model *m, int batch, int size, xf_error *err);
xf_status xf_zoo_build_resnext50(xf_model *m, int batch, int size, xf_error *err);
xf_status xf_zoo_build_inception_v3(xf_model *m, int batch, int size, xf_error *err);
xf_status xf_zoo_build_squeezenet(xf_model *m, int batch, int size, xf_error *err);
/* zoo_nasnet.c */
xf_status xf_zoo_build_nasnet_a(xf_model *m, int batch, int size, xf_error *err);
/* zoo_nlp.c */
xf_status xf_zoo_build_nasrnn(xf_model *m, int batch, int size, xf_error *err);
xf_status xf_zoo_build_bert(xf_model *m, int batch, int size, xf_error *err);

#endif
