// Where a writer puts its output until it is complete: a hidden name beside the output, unique to this
// process and call (".NAME.partial-PID-N"), renamed to the output at the end, so that a failed, killed or
// concurrent conversion never leaves or clobbers a complete-looking output.
#pragma once

#include <string>

#include "tilewise/status.h"

namespace tilewise::write {

// The partial name of `path` (a file, or a folder with or without a trailing '/').
std::string partial_name(const std::string& path);

// A folder output (a DICOM series, an OME-Zarr group) under its partial name: created by create(), renamed
// to the output by commit(), removed with what it holds when destroyed uncommitted.
class PartialFolder {
 public:
  // InvalidArgument when `folder` exists and is not empty (`what` names the output in the message).
  static Result<PartialFolder> create(const std::string& folder, const std::string& what);
  PartialFolder(PartialFolder&& other) noexcept;
  PartialFolder& operator=(PartialFolder&&) = delete;
  ~PartialFolder();

  const std::string& output() const { return folder_; }
  const std::string& temp() const { return temp_; }
  // Renames the partial folder to the output (replacing an empty folder of that name).
  Status commit();

 private:
  PartialFolder(std::string folder, std::string temp) : folder_(std::move(folder)), temp_(std::move(temp)) {}
  std::string folder_, temp_;
  bool committed_ = false;
};

}  // namespace tilewise::write
