/*===- kiln/c_api.h - Running compiled models (C API) -------------*- C -*-===*
 *
 * The C face of kiln.h. Functions that can fail return 0 on success or a kiln
 * error code (the KE number, e.g. 5003 for a corrupt artifact); the message
 * is then available from kiln_last_error() on the same thread. A model may
 * be run from several threads at once.
 *
 *   kiln_model* m;
 *   if (kiln_model_load("model.kiln", &m)) { puts(kiln_last_error()); return 1; }
 *   float in[...], out[...];
 *   const void* ins[] = {in}; void* outs[] = {out};
 *   kiln_model_run(m, ins, outs);
 *   kiln_model_free(m);
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_C_API_H
#define KILN_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_model kiln_model;

/* Element types (the values of kiln::DType, and KILN_STRING). */
enum {
  KILN_F32 = 1, KILN_F64 = 2, KILN_F16 = 3, KILN_BF16 = 4, KILN_I8 = 5, KILN_I16 = 6, KILN_I32 = 7,
  KILN_I64 = 8, KILN_U8 = 9, KILN_U16 = 10, KILN_U32 = 11, KILN_U64 = 12, KILN_BOOL = 13,
  /* A string tensor (ONNX STRING). Its data is an array of const char*, one
     NUL-terminated UTF-8 string per element, row-major; its bytes count
     those pointers. Output strings are kiln's own: they stay valid for the
     life of the process and must not be freed. A string holding a NUL byte
     reads as ending there. */
  KILN_STRING = 14
};

int kiln_model_load(const char* path, kiln_model** model);
void kiln_model_free(kiln_model* model);

size_t kiln_model_num_inputs(const kiln_model* model);
size_t kiln_model_num_outputs(const kiln_model* model);
/* Name, element type, rank, dims and size in bytes of input/output i (null / 0 when out of range).
   A dim that depends on the data is -1 (the bytes are then 0); an output whose rank too
   depends on the data (an If whose branches differ) has rank KILN_UNKNOWN_RANK. */
#define KILN_UNKNOWN_RANK ((size_t)-1)
const char* kiln_model_input_name(const kiln_model* model, size_t i);
const char* kiln_model_output_name(const kiln_model* model, size_t i);
int kiln_model_input_dtype(const kiln_model* model, size_t i);
int kiln_model_output_dtype(const kiln_model* model, size_t i);
size_t kiln_model_input_rank(const kiln_model* model, size_t i);
size_t kiln_model_output_rank(const kiln_model* model, size_t i);
const int64_t* kiln_model_input_dims(const kiln_model* model, size_t i);
const int64_t* kiln_model_output_dims(const kiln_model* model, size_t i);
size_t kiln_model_input_bytes(const kiln_model* model, size_t i);
size_t kiln_model_output_bytes(const kiln_model* model, size_t i);

/* An artifact compiled with shape ranges (kiln compile --min-shapes ...)
   has dynamic dims: -1 in kiln_model_input_dims (its bytes are 0). These give
   each dim of input i the smallest and largest value a run may give it and
   the value the kernels were tuned for (all three the dim where it is
   fixed); null when out of range. Such a model runs with kiln_model_run_shaped. */
const int64_t* kiln_model_input_min_dims(const kiln_model* model, size_t i);
const int64_t* kiln_model_input_opt_dims(const kiln_model* model, size_t i);
const int64_t* kiln_model_input_max_dims(const kiln_model* model, size_t i);

/* Runs once: inputs[i] points at input i's data (dense, row-major, its type);
   outputs[i] at room for output i (kiln_model_output_bytes). Models with an
   output whose shape depends on the data (its dims hold -1 or its rank is
   KILN_UNKNOWN_RANK, its bytes are 0) need kiln_model_run_outputs instead,
   and models with dynamic input dims kiln_model_run_shaped. */
int kiln_model_run(const kiln_model* model, const void* const* inputs, void* const* outputs);

/* Runs once and returns outputs the runtime allocated, with their actual
   shapes (any model; required when output shapes depend on the data). Free
   them with kiln_outputs_free. */
typedef struct kiln_outputs kiln_outputs;
int kiln_model_run_outputs(const kiln_model* model, const void* const* inputs, kiln_outputs** outputs);
/* Runs once with input i of dims input_dims[i] (kiln_model_input_rank(model, i)
   of them, dense and row-major at inputs[i]); a dim outside its range is an
   error naming the input, the dim and the range. Outputs as from
   kiln_model_run_outputs. Any model (static dims must match). */
int kiln_model_run_shaped(const kiln_model* model, const void* const* inputs, const int64_t* const* input_dims,
                          kiln_outputs** outputs);
size_t kiln_outputs_rank(const kiln_outputs* outputs, size_t i);
const int64_t* kiln_outputs_dims(const kiln_outputs* outputs, size_t i);
size_t kiln_outputs_bytes(const kiln_outputs* outputs, size_t i);
const void* kiln_outputs_data(const kiln_outputs* outputs, size_t i);
void kiln_outputs_free(kiln_outputs* outputs);

/* Threads kernels use (process-wide). */
void kiln_set_threads(int threads);

/* The message of this thread's last failed call ("" if none). */
const char* kiln_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* KILN_C_API_H */
