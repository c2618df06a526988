#include "gpu/region_reader.h"

#include "gpu/device_read.h"

namespace tilewise::gpu {

Status check_output(const region::RegionRequest& req) {
  if (!req.out.is_rgb8() || req.out.width < req.width || req.out.height < req.height ||
      req.out.stride < req.width * 3) {
    return invalid_argument("output buffer is smaller than the region or not an 8-bit RGB buffer");
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
