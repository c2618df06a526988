// OpenJPEG's message handlers as the JPEG 2000 decoder and encoder install them: the first error kept (for
// the Status that names it), warnings and information dropped.
#pragma once

#include <openjpeg.h>

#include <string>

namespace tilewise::codecs {

inline void keep_first_openjpeg_error(const char* msg, void* user) {
  auto* error = static_cast<std::string*>(user);
  if (error->empty()) {
    *error = msg;
    while (!error->empty() && (error->back() == '\n' || error->back() == ' ')) error->pop_back();
  }
}

inline void drop_openjpeg_message(const char*, void*) {}

// Installs both on `codec`; its first error goes to `error`.
inline void route_openjpeg_messages(opj_codec_t* codec, std::string* error) {
  opj_set_error_handler(codec, keep_first_openjpeg_error, error);
  opj_set_warning_handler(codec, drop_openjpeg_message, nullptr);
  opj_set_info_handler(codec, drop_openjpeg_message, nullptr);
}

}  // namespace tilewise::codecs
