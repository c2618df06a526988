// The public C++ API of tilewise: include this header only.
#pragma once

#include "tilewise/batch_loader.h"
#include "tilewise/config.h"
#include "tilewise/convert.h"
#include "tilewise/gpu.h"
#include "tilewise/image_view.h"
#include "tilewise/memory.h"
#include "tilewise/slide.h"
#include "tilewise/status.h"
#include "tilewise/types.h"

namespace tilewise {
const char* version();
}
