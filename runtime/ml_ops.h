/* The host ops: ONNX-ML (domain ai.onnx.ml), ONNX's string, text and loss
 * ops, the training optimizers and ONNX Runtime's Tokenizer, shared
 * between ml_ops.c (the dispatch, attributes, labels, scores and post
 * transforms, preprocessing and linear models) and the files of the tree
 * ensembles (ml_trees.c), SVMs (ml_svm.c), encoders (ml_encoders.c), the
 * ops on maps (ml_maps.c),
 * string ops (string_ops.c), ImageDecoder (image_decoder.c), TfIdfVectorizer (tfidf.c), the regular
 * expressions (regex_ops.c), the loss ops (loss_ops.c) and the optimizers
 * of ai.onnx.preview.training (training_ops.c).  See xf_rt_internal.h for
 * what the session calls. */
#ifndef XF_ML_OPS_H
#define XF_ML_OPS_H

#include "xf_rt_internal.h"

/* post_transform, in ONNX Runtime's order */
enum { ML_NONE, ML_LOGISTIC, ML_SOFTMAX, ML_SOFTMAX_ZERO, ML_PROBIT };

/* Error naming node n and its op: "node 'n' (TreeEnsembleClassifier): ...". */
xf_status xf_ml_fail(const xf_node *n, xf_error *err, xf_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Attribute a of n: its integers, reals or strings (NULL and *count 0
 * when not given). */
const int64_t *xf_ml_ints(const xf_node *n, const char *a, int64_t *count);
const double *xf_ml_reals(const xf_node *n, const char *a, int64_t *count);
/* String attribute a: its one string, or def when not given. */
const char *xf_ml_string(const xf_node *n, const char *a, const char *def);
/* post_transform of n (*t); an error for an unknown one. */
xf_status xf_ml_transform(const xf_node *n, int *t, xf_error *err);
/* Writes the n scores s as ONNX Runtime does for a classifier or
 * regressor with transform t: two or more transformed in place and copied
 * to z; one by add_second (the binary cases: 0 and 1 write 1 - s and s;
 * 2 and 3 -s and s, their logistic under LOGISTIC; -1 s alone), PROBIT
 * turning it into one probit.  Returns how many it wrote. */
int64_t xf_ml_write_scores(float *s, int64_t n, int t, int add_second, float *z);
/* Input X of rank 1 (one row) or 2 as doubles (*v, to free): *rows and
 * *cols its extents; an error for another rank or a non-numeric type. */
xf_status xf_ml_rows(const xf_node *n, const xf_tensor *x, double **v, int64_t *rows, int64_t *cols, xf_error *err);

/* A classifier's class labels: integers (attribute ints_attr:
 * classlabels_ints or classlabels_int64s) or strings
 * (classlabels_strings); n of them. */
typedef struct xf_ml_labels {
    int64_t n;
    const int64_t *ints;
    char *const *strings; /* NULL for integer labels */
} xf_ml_labels;
xf_ml_labels xf_ml_labels_of(const xf_node *n, const char *ints_attr);
/* The label output for rows rows: int64, or strings (a tensor the session
 * holds like a sequence); NULL (err set) when out of memory. */
xf_tensor *xf_ml_label_tensor(const xf_ml_labels *l, int64_t rows, xf_error *err);
/* Sets row r of y to label `which` (0 .. n - 1; with no labels the index
 * itself), or to ONNX Runtime's fallbacks: ML_LABEL_0 is 0 or "0",
 * ML_LABEL_1 is 1 or "1".  False when out of memory. */
enum { ML_LABEL_0 = -1, ML_LABEL_1 = -2 };
bool xf_ml_set_label(xf_tensor *y, int64_t r, const xf_ml_labels *l, int64_t which);

/* TreeEnsembleRegressor and TreeEnsembleClassifier (ml_trees.c). */
typedef struct xf_ml_trees xf_ml_trees;
xf_status xf_ml_trees_create(const xf_node *n, bool classifier, xf_ml_trees **out, xf_error *err);
/* out[0] and out[1]: the classifier's labels [N] and scores [N, classes];
 * the regressor's scores [N, targets] in out[0]. */
xf_status xf_ml_trees_run(const xf_ml_trees *t, const xf_node *n, const xf_tensor *x, xf_tensor **out,
                          xf_error *err);
void xf_ml_trees_free(xf_ml_trees *t);

/* SVMRegressor and SVMClassifier (ml_svm.c): the attributes checked, and
 * a run (out as for the tree ensembles) with post transform t. */
xf_status xf_ml_svm_check(const xf_node *n, bool classifier, xf_error *err);
xf_status xf_ml_svm_run(const xf_node *n, bool classifier, int t, const xf_tensor *x, xf_tensor **out,
                        xf_error *err);

/* LabelEncoder and CategoryMapper (category), OneHotEncoder
 * (ml_encoders.c): X to out[0]. */
xf_status xf_ml_encode_map(const xf_node *n, bool category, const xf_tensor *x, xf_tensor **out, xf_error *err);
xf_status xf_ml_one_hot(const xf_node *n, const xf_tensor *x, xf_tensor **out, xf_error *err);

/* DictVectorizer (a plan of its vocabulary), CastMap and ZipMap
 * (ml_maps.c): the map in[0] to the tensor out[0]; ZipMap's scores X to a
 * sequence of maps. */
typedef struct xf_ml_dict xf_ml_dict;
xf_status xf_ml_dict_create(const xf_node *n, xf_ml_dict **out, xf_error *err);
xf_status xf_ml_dict_run(const xf_ml_dict *d, const xf_tensor *in, xf_tensor **out, xf_error *err);
void xf_ml_dict_free(xf_ml_dict *d);
xf_status xf_ml_cast_map_check(const xf_node *n, xf_error *err);
xf_status xf_ml_cast_map_run(const xf_node *n, const xf_tensor *in, xf_tensor **out, xf_error *err);
xf_status xf_ml_zip_map(const xf_node *n, const xf_tensor *x, xf_tensor **out, xf_error *err);
/* StringConcat, StringSplit and StringNormalizer (string_ops.c): out[0]
 * (StringSplit: and the counts in out[1]). */
xf_status xf_str_concat(const xf_node *n, const xf_tensor *x, const xf_tensor *y, xf_tensor **out, xf_error *err);
xf_status xf_str_split(const xf_node *n, const xf_tensor *x, xf_tensor **out, xf_error *err);
xf_status xf_str_normalize(const xf_node *n, const xf_tensor *x, xf_tensor **out, xf_error *err);

/* TfIdfVectorizer (tfidf.c): a plan of the node's pool, and a run of X to
 * out[0], refused where it would pass max_bytes (0: no limit). */
typedef struct xf_ml_tfidf xf_ml_tfidf;
xf_status xf_ml_tfidf_create(const xf_node *n, xf_ml_tfidf **out, xf_error *err);
xf_status xf_ml_tfidf_run(const xf_ml_tfidf *t, const xf_node *n, const xf_tensor *x, size_t max_bytes, xf_tensor **out,
                          xf_error *err);
void xf_ml_tfidf_free(xf_ml_tfidf *t);

/* RegexFullMatch and Tokenizer (regex_ops.c): the node's patterns
 * compiled, and a run of X to out[0]. */
typedef struct xf_ml_regex xf_ml_regex;
xf_status xf_ml_regex_create(const xf_node *n, bool tokenizer, xf_ml_regex **out, xf_error *err);
xf_status xf_ml_regex_run(const xf_ml_regex *x, const xf_node *n, const xf_tensor *in, xf_tensor **out,
                          xf_error *err);
void xf_ml_regex_free(xf_ml_regex *x);

/* ImageDecoder (image_decoder.c): pixel_format checked, and a run of the
 * encoded bytes X to out[0] ([H, W, C] uint8; [0, 0, C] for bytes that do
 * not decode), an image of more than max_bytes (0: no limit) refused
 * (the formats: xf_runtime_image_formats). */
xf_status xf_image_check(const xf_node *n, xf_error *err);
xf_status xf_image_decode(const xf_node *n, size_t max_bytes, const xf_tensor *x, xf_tensor **out, xf_error *err);

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (loss_ops.c,
 * softmax for the latter): the attributes checked, and a run of in[] to
 * out[0] (and the log-probabilities to out[1]). */
xf_status xf_ml_loss_check(const xf_node *n, xf_error *err);
xf_status xf_ml_loss_run(const xf_node *n, bool softmax, xf_tensor *const *in, xf_tensor **out, xf_error *err);

/* Adagrad, Momentum and Adam of ai.onnx.preview.training (training_ops.c):
 * the groups of tensors n updates (-1 when its inputs and outputs do not
 * make whole groups), its attributes checked, and one step of in[] to
 * out[] (every group's new X, then each state's). */
enum { XF_ML_ADAGRAD, XF_ML_MOMENTUM, XF_ML_ADAM };
int xf_ml_optimizer_groups(const xf_node *n, int kind);
xf_status xf_ml_optimizer_check(const xf_node *n, int kind, xf_error *err);
xf_status xf_ml_optimizer_run(const xf_node *n, int kind, xf_tensor *const *in, xf_tensor **out, xf_error *err);

#endif
