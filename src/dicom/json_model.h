// The DICOM JSON model (PS3.18 F.2), as DICOMweb answers metadata requests, made the datasets the Part 10
// reader makes (dicom/data_set.h), so that one driver reads a series from files and from a server alike.
//
// Values become the bytes a Part 10 file would hold: strings (DS and IS numbers in their shortest decimal
// form, person names as their components joined by '='), binary numbers little endian, InlineBinary decoded;
// a BulkDataURI value is left empty and its URI noted (the caller fetches the ones it needs). The per-frame
// functional groups give each frame's position, focal plane and optical path, as the Part 10 reader extracts
// them, and are dropped from the dataset. Group 0002 elements, where a server adds them, go to the file
// meta, which also gets the SOP Class and Instance UIDs; the transfer syntax is left to the caller (a server
// answers frames in a syntax it negotiates).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dicom/data_set.h"

namespace tilewise::dicom {

struct JsonInstance {
  File file;
  std::string icc_profile_uri;  // the first optical path's ICC Profile, when given as a BulkDataURI
  std::vector<std::string> transfer_syntaxes;  // what the metadata says the server stores or offers (may be none)
};

// The instances of a series' metadata (a JSON array of objects). Corrupt when it is not DICOM JSON or a value
// does not fit its VR; `limits` bound nesting and per-frame items as for files.
Result<std::vector<JsonInstance>> parse_json_metadata(std::string_view json, const ParseLimits& limits = {});

}  // namespace tilewise::dicom
