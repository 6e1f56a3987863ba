//===- lib/ir/ops/DetectionOps.cpp - Detection and sampling ops ------------===//
//
// NonMaxSuppression (data-dependent result count), RoiAlign and GridSample.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

Status inferNms(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType boxes, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType scores, ctx.inputTensor(1));
  KILN_TRY(requireRank(boxes, 3, "boxes"));
  KILN_TRY(requireRank(scores, 3, "scores"));
  if (boxes.hasRank() && boxes.dim(2) >= 0 && boxes.dim(2) != 4)
    return shapeError("boxes must be [batch, boxes, 4], got " + boxes.str());
  if (boxes.hasRank() && scores.hasRank()) {
    if (boxes.dim(0) >= 0 && scores.dim(0) >= 0 && boxes.dim(0) != scores.dim(0))
      return shapeError("boxes " + boxes.str() + " and scores " + scores.str() + " differ in batch size");
    if (boxes.dim(1) >= 0 && scores.dim(2) >= 0 && boxes.dim(1) != scores.dim(2))
      return shapeError("boxes " + boxes.str() + " and scores " + scores.str() + " differ in box count");
  }
  int64_t cpb = ctx.node().getInt("center_point_box");
  if (cpb != 0 && cpb != 1) return attrError("center_point_box must be 0 or 1");
  setOut(ctx, 0, DType::I64, {kUnknownDim, 3});
  return Status::ok();
}

Status inferRoiAlign(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType rois, ctx.inputTensor(1));
  KILN_TRY(requireRank(x, 4, "X"));
  KILN_TRY(requireRank(rois, 2, "rois"));
  const Node& n = ctx.node();
  const std::string& mode = n.getString("mode");
  if (mode != "avg" && mode != "max") return attrError("mode must be avg or max");
  const std::string& ctm = n.getString("coordinate_transformation_mode");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return attrError("coordinate_transformation_mode must be half_pixel or output_half_pixel");
  setOut(ctx, 0, x.dtype(), {rois.hasRank() ? rois.dim(0) : kUnknownDim, x.hasRank() ? x.dim(1) : kUnknownDim,
                             n.getInt("output_height"), n.getInt("output_width")});
  return Status::ok();
}

Status inferGridSample(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType grid, ctx.inputTensor(1));
  // 2-D images ([N,C,H,W] with grid [N,Ho,Wo,2]) or 3-D volumes ([N,C,D,H,W] with grid [N,Do,Ho,Wo,3]).
  const int64_t rank = x.hasRank() ? x.rank() : grid.hasRank() ? grid.rank() : 4;
  if (rank != 4 && rank != 5) return shapeError("X must be [N,C,H,W] or [N,C,D,H,W], got " + x.str());
  KILN_TRY(requireRank(x, rank, "X"));
  KILN_TRY(requireRank(grid, rank, "grid"));
  if (grid.hasRank() && grid.dim(rank - 1) >= 0 && grid.dim(rank - 1) != rank - 2)
    return shapeError("grid's last dim must be " + std::to_string(rank - 2) + ", got " + grid.str());
  const Node& n = ctx.node();
  const std::string& mode = n.getString("mode");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") return attrError("mode must be bilinear, nearest or bicubic");
  if (mode == "bicubic" && rank == 5) return attrError("bicubic samples 2-D images only");
  const std::string& pad = n.getString("padding_mode");
  if (pad != "zeros" && pad != "border" && pad != "reflection") return attrError("padding_mode must be zeros, border or reflection");
  Dims out = {x.hasRank() ? x.dim(0) : kUnknownDim, x.hasRank() ? x.dim(1) : kUnknownDim};
  for (int64_t a = 1; a < rank - 1; ++a) out.push_back(grid.hasRank() ? grid.dim(a) : kUnknownDim);
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

}  // namespace

void registerDetectionOps(OpRegistry& r) {
  r.add(SchemaBuilder("NonMaxSuppression")
            .inputs(2, 5, {"boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"})
            .outputs(1, 1, {"selected_indices"}).attr("center_point_box", 0).pattern(FusionPattern::Opaque)
            .infer(inferNms).doc("Greedy per-class box selection: rows of [batch, class, box] (data-dependent count).")
            .build());
  r.add(SchemaBuilder("RoiAlign").inputs(3, 3, {"X", "rois", "batch_indices"}).outputs(1, 1, {"Y"})
            .attr("coordinate_transformation_mode", "half_pixel").attr("mode", "avg").attr("output_height", 1)
            .attr("output_width", 1).attr("sampling_ratio", 0).attr("spatial_scale", 1.0f)
            .pattern(FusionPattern::Opaque).infer(inferRoiAlign)
            .doc("Bilinearly sampled average/max pooling of regions of interest.").build());
  r.add(SchemaBuilder("GridSample").inputs(2, 2, {"X", "grid"}).outputs(1, 1, {"Y"}).attr("align_corners", 0)
            .attr("mode", "bilinear").attr("padding_mode", "zeros").pattern(FusionPattern::Opaque)
            .infer(inferGridSample).doc("Samples X at normalised grid locations (bilinear, nearest or bicubic).")
            .build());
}

}  // namespace kiln::ir
