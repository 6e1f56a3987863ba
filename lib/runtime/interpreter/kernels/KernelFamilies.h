//===- lib/runtime/interpreter/kernels/KernelFamilies.h - Kernel registration -===//
//
// One registration function per kernel family file; registerAllKernels()
// calls them in a fixed order.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace kiln::runtime {
class KernelRegistry;
void registerElementwiseKernels(KernelRegistry& r);
void registerReductionKernels(KernelRegistry& r);
void registerConvKernels(KernelRegistry& r);
void registerPoolKernels(KernelRegistry& r);
void registerNormalizationKernels(KernelRegistry& r);
void registerLinearAlgebraKernels(KernelRegistry& r);
void registerShapeKernels(KernelRegistry& r);
void registerResamplingKernels(KernelRegistry& r);
void registerIndexingKernels(KernelRegistry& r);
void registerControlFlowKernels(KernelRegistry& r);
void registerSequenceKernels(KernelRegistry& r);
void registerRecurrentKernels(KernelRegistry& r);
void registerQuantizationKernels(KernelRegistry& r);
void registerSignalKernels(KernelRegistry& r);
void registerLossAndTrainingKernels(KernelRegistry& r);
void registerDetectionKernels(KernelRegistry& r);
void registerRandomKernels(KernelRegistry& r);
void registerKilnKernels(KernelRegistry& r);
void registerStringKernels(KernelRegistry& r);
void registerImageKernels(KernelRegistry& r);
}  // namespace kiln::runtime
