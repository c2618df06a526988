#include "gpu/region_reader.h"

#include "gpu/device_read.h"

namespace tilewise::gpu {

Status check_output(const region::RegionRequest& req) {
  const codecs::TileDesc& desc = req.level->desc;
  const bool samples = req.out.channels == desc.samples_per_pixel && req.out.sample_bytes * 8 == desc.bits_per_sample;
  if (!(req.out.is_rgb8() || samples) || req.out.width < req.width || req.out.height < req.height ||
      req.out.stride < req.width * static_cast<int64_t>(req.out.pixel_bytes())) {
    return invalid_argument("output buffer is smaller than the region or neither 8-bit RGB nor the level's samples");
  }
  return Status();
}

Status DeviceRegionReader::read(const region::RegionRequest& req, DeviceContext* given) const {
  TW_ASSIGN_OR_RETURN(const region::RegionPlan plan,
                      region::plan_region(*req.level, req.level_label, req.x, req.y, req.width, req.height));
  if (plan.region.empty()) return Status();
  TW_RETURN_IF_ERROR(check_output(req));
  DeviceContext* context = given;
  if (!context) {
    TW_ASSIGN_OR_RETURN(context, device_context(req.out.device.index));
  }
  if (const auto side = large_route(req, plan, *context)) return read_large(req, plan, *side, *context);
  return read_planned({&req, 1}, {&plan, 1}, *context, /*large=*/false, std::vector<Status>(1)).front();
}

}  // namespace tilewise::gpu
