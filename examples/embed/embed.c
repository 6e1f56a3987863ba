/*===- examples/embed/embed.c - Running a compiled model from C ------------===*
 *
 * The same job as embed.cpp through the C API: load, describe, fill f32
 * inputs with x[i] = sin(i) / 2 and string inputs with words[i % 5] (other
 * types are refused), run, print the shape and first values of each f32 or
 * string output. Models whose output shapes
 * depend on the data (a detector's boxes) run with kiln_model_run_outputs;
 * models compiled for shape ranges with kiln_model_run_shaped, at the
 * inputs' opt dims; the others with kiln_model_run into buffers sized up
 * front. Errors print kiln_last_error().
 *
 *   embed_c model.kiln
 *
 *===----------------------------------------------------------------------===*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln/c_api.h"

/* String inputs: element i is words[i % 5]. */
static const char* const words[] = {"Kiln", "compiles", "ONNX", "models", "Fast"};

static int has_dynamic_outputs(const kiln_model* model) {
  for (size_t o = 0; o < kiln_model_num_outputs(model); ++o) {
    if (kiln_model_output_rank(model, o) == KILN_UNKNOWN_RANK) return 1;
    for (size_t d = 0; d < kiln_model_output_rank(model, o); ++d)
      if (kiln_model_output_dims(model, o)[d] < 0) return 1;
  }
  return 0;
}

static int has_dynamic_inputs(const kiln_model* model) {
  for (size_t i = 0; i < kiln_model_num_inputs(model); ++i)
    for (size_t d = 0; d < kiln_model_input_rank(model, i); ++d)
      if (kiln_model_input_dims(model, i)[d] < 0) return 1;
  return 0;
}

static void print_output(const kiln_model* model, size_t o, const void* data, size_t bytes, size_t rank,
                         const int64_t* dims) {
  printf("output %s [", kiln_model_output_name(model, o));
  for (size_t d = 0; d < rank; ++d) printf(d ? ",%lld" : "%lld", (long long)dims[d]);
  printf("]:");
  if (kiln_model_output_dtype(model, o) == KILN_F32) {
    const float* v = data;
    for (size_t k = 0; k < bytes / sizeof(float) && k < 8; ++k) printf(" %.9g", (double)v[k]);
  } else if (kiln_model_output_dtype(model, o) == KILN_STRING) {
    const char* const* v = data; /* kiln's strings: never freed by the caller */
    for (size_t k = 0; k < bytes / sizeof(const char*) && k < 8; ++k) printf(" \"%s\"", v[k]);
  }
  printf("\n");
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s model.kiln\n", argv[0]);
    return 2;
  }
  kiln_model* model = NULL;
  if (kiln_model_load(argv[1], &model) != 0) {
    fprintf(stderr, "%s\n", kiln_last_error());
    return 1;
  }
  size_t ni = kiln_model_num_inputs(model), no = kiln_model_num_outputs(model);
  const void** inputs = calloc(ni, sizeof(void*));
  void** outputs = calloc(no, sizeof(void*));
  for (size_t i = 0; i < ni; ++i) {
    size_t n = 1; /* at the opt dims: the dims themselves where they are fixed */
    for (size_t d = 0; d < kiln_model_input_rank(model, i); ++d) n *= (size_t)kiln_model_input_opt_dims(model, i)[d];
    if (kiln_model_input_dtype(model, i) == KILN_F32) {
      float* data = malloc(n * sizeof(float) + 1);
      for (size_t k = 0; k < n; ++k) data[k] = (float)(sin((double)k) / 2);
      inputs[i] = data;
    } else if (kiln_model_input_dtype(model, i) == KILN_STRING) {
      const char** data = malloc(n * sizeof(const char*) + 1);
      for (size_t k = 0; k < n; ++k) data[k] = words[k % 5];
      inputs[i] = data;
    } else {
      fprintf(stderr, "input %s is neither f32 nor string\n", kiln_model_input_name(model, i));
      return 1;
    }
    printf("input %s rank %zu\n", kiln_model_input_name(model, i), kiln_model_input_rank(model, i));
  }
  if (has_dynamic_outputs(model)) {
    kiln_outputs* results = NULL;
    const int64_t** dims = calloc(ni, sizeof(int64_t*));
    for (size_t i = 0; i < ni; ++i) dims[i] = kiln_model_input_opt_dims(model, i);
    int failed = has_dynamic_inputs(model) ? kiln_model_run_shaped(model, inputs, dims, &results)
                                           : kiln_model_run_outputs(model, inputs, &results);
    free(dims);
    if (failed != 0) {
      fprintf(stderr, "%s\n", kiln_last_error());
      return 1;
    }
    for (size_t o = 0; o < no; ++o)
      print_output(model, o, kiln_outputs_data(results, o), kiln_outputs_bytes(results, o), kiln_outputs_rank(results, o),
                   kiln_outputs_dims(results, o));
    kiln_outputs_free(results);
  } else {
    for (size_t o = 0; o < no; ++o) outputs[o] = malloc(kiln_model_output_bytes(model, o) + 1);
    if (kiln_model_run(model, inputs, outputs) != 0) {
      fprintf(stderr, "%s\n", kiln_last_error());
      return 1;
    }
    for (size_t o = 0; o < no; ++o)
      print_output(model, o, outputs[o], kiln_model_output_bytes(model, o), kiln_model_output_rank(model, o),
                   kiln_model_output_dims(model, o));
  }
  /* A wrong path is an error with a message, not a crash. */
  kiln_model* missing = NULL;
  int code = kiln_model_load("/nonexistent/model.kiln", &missing);
  printf("missing artifact: code %d, %s\n", code, kiln_last_error());
  for (size_t i = 0; i < ni; ++i) free((void*)inputs[i]);
  for (size_t o = 0; o < no; ++o) free(outputs[o]);
  free(inputs);
  free(outputs);
  kiln_model_free(model);
  return code == 0 ? 1 : 0;
}
