//===- lib/ir/ops/OpFamilies.h - Registration entry points of op families -===//
//
// Each file in lib/ir/ops/ defines one family of ops; registerAllOps() calls
// these in a fixed order.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace kiln::ir {
class OpRegistry;
void registerElementwiseOps(OpRegistry& r);
void registerReductionOps(OpRegistry& r);
void registerConvPoolOps(OpRegistry& r);
void registerNormalizationOps(OpRegistry& r);
void registerLinearAlgebraOps(OpRegistry& r);
void registerShapeOps(OpRegistry& r);
void registerIndexingOps(OpRegistry& r);
void registerControlFlowOps(OpRegistry& r);
void registerSequenceOps(OpRegistry& r);
void registerRecurrentOps(OpRegistry& r);
void registerQuantizationOps(OpRegistry& r);
void registerSignalOps(OpRegistry& r);
void registerLossAndTrainingOps(OpRegistry& r);
void registerDetectionOps(OpRegistry& r);
void registerGeneratorOps(OpRegistry& r);
void registerKilnOps(OpRegistry& r);
void registerStringOps(OpRegistry& r);
void registerImageOps(OpRegistry& r);
}  // namespace kiln::ir
