// STOW-RS (DICOM PS3.18 10.5): a folder of DICOM instances stored on a DICOMweb server, one POST of
// multipart/related (type application/dicom) per instance to <base>/studies, each instance's file streamed
// from disk. The server's answer is judged per instance: 200 is stored; 202 (stored with warnings or some
// failed), 409 (refused) and any other status fail with the status and the start of the server's answer.
#pragma once

#include <string>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::write {

// Sends every *.dcm file of `folder` (in name order) to the DICOMweb service at `base_url` (the URL that
// /studies follows, such as http://host:8042/dicom-web), with `headers` ("Name: value") on each request.
Status stow_rs(const std::string& folder, const std::string& base_url, const std::vector<std::string>& headers);

}  // namespace tilewise::write
