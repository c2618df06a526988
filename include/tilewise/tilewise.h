// The public C++ API of tilewise. Include this header only.
#pragma once

#include "tilewise/cache_config.h"
#include "tilewise/image_view.h"
#include "tilewise/slide.h"
#include "tilewise/status.h"

namespace tilewise {
const char* version();
}
