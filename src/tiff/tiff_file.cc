#include "tiff/tiff_file.h"

#include <algorithm>
#include <unordered_set>

#include "tiff/ifd_parser.h"
#include "tiff/tags.h"

namespace tilewise::tiff {

bool TiffFile::has_tiff_header(const io::Source& source) {
  uint8_t h[4];
  if (source.size() < 8 || !source.pread(h, 0).ok()) return false;
  const bool le = h[0] == 'I' && h[1] == 'I', be = h[0] == 'M' && h[1] == 'M';
  if (!le && !be) return false;
  const unsigned version = le ? (h[2] | h[3] << 8) : (h[2] << 8 | h[3]);
  return version == 42 || version == 43;
}

Result<std::shared_ptr<const TiffFile>> TiffFile::parse(std::shared_ptr<const io::Source> source,
                                                        const ParseLimits& limits) {
  const std::string& name = source->name();
  if (!has_tiff_header(*source)) return unsupported(name + ": not a TIFF file");

  std::shared_ptr<TiffFile> file(new TiffFile());
  file->source_ = source;
  uint8_t header[16] = {};
  const size_t header_size = source->size() >= 16 ? 16 : 8;
  TW_RETURN_IF_ERROR(source->pread({header, header_size}, 0).with_context(name));
  file->little_endian_ = header[0] == 'I';
  IfdParser probe(*source, file->little_endian_, false, limits);
  const uint64_t version = probe.read_uint(header + 2, 2);
  file->big_tiff_ = version == 43;
  uint64_t first;
  if (file->big_tiff_) {
    if (header_size < 16 || probe.read_uint(header + 4, 2) != 8 || probe.read_uint(header + 6, 2) != 0) {
      return corrupt(name + ": malformed BigTIFF header");
    }
    first = probe.read_uint(header + 8, 8);
  } else {
    first = probe.read_uint(header + 4, 4);
  }
  if (first == 0) return corrupt(name + ": TIFF has no image directory");

  // NDPI is classic TIFF pretending to be 64-bit: its first-IFD offset is 8 bytes. It is NDPI when that
  // 64-bit offset leads to a directory holding NDPI's format tag (as OpenSlide decides).
  if (!file->big_tiff_ && header_size >= 12) {
    const uint64_t wide = probe.read_uint(header + 4, 8);
    IfdParser trial(*source, file->little_endian_, false, limits, /*ndpi=*/true);
    uint64_t ignored = 0;
    auto ifd = trial.parse(wide, &ignored);
    for (const PrivateTag& t : ifd.ok() ? ifd->private_tags : std::vector<PrivateTag>{}) {
      if (t.tag == kNdpiFormatFlag && t.count > 0) {
        file->ndpi_ = true;
        first = wide;
      }
    }
  }

  IfdParser parser(*source, file->little_endian_, file->big_tiff_, limits, file->ndpi_);
  std::unordered_set<uint64_t> seen;
  uint32_t total = 0;
  auto visit = [&](uint64_t offset) -> Status {
    if (!seen.insert(offset).second) {
      return corrupt(name + ": IFD loop: the directory at offset " + std::to_string(offset) + " is referenced twice");
    }
    if (++total > limits.max_ifds) {
      return corrupt(name + ": more than " + std::to_string(limits.max_ifds) + " image directories");
    }
    return Status();
  };

  for (uint64_t offset = first; offset != 0;) {
    TW_RETURN_IF_ERROR(visit(offset));
    uint64_t next = 0;
    const int index = static_cast<int>(file->ifds_.size());
    auto parsed = parser.parse(offset, &next);
    if (!parsed.ok()) return parsed.status().with_context(name + ": IFD " + std::to_string(index));
    Ifd ifd = std::move(parsed).value();
    ifd.index = index;
    // SubIFDs (and any chain hanging off each) belong to this directory. Writers such as tifffile also
    // chain the listed SubIFDs to each other; a link to a directory the tag lists is not a loop.
    const std::unordered_set<uint64_t> listed(ifd.sub_ifd_offsets.begin(), ifd.sub_ifd_offsets.end());
    for (size_t s = 0; s < ifd.sub_ifd_offsets.size(); ++s) {
      if (seen.count(ifd.sub_ifd_offsets[s])) continue;  // reached through an earlier SubIFD's chain
      for (uint64_t sub_offset = ifd.sub_ifd_offsets[s]; sub_offset != 0;) {
        TW_RETURN_IF_ERROR(visit(sub_offset));
        uint64_t sub_next = 0;
        auto sub = parser.parse(sub_offset, &sub_next);
        if (!sub.ok()) return sub.status().with_context(name + ": SubIFD " + std::to_string(s) + " of IFD " + std::to_string(index));
        sub->parent = index;
        sub->sub_index = static_cast<int>(ifd.sub_ifds.size());
        ifd.sub_ifds.push_back(std::move(sub).value());
        sub_offset = sub_next;
        if (listed.count(sub_offset)) break;  // another entry of the tag: visited in its own turn
      }
    }
    file->ifds_.push_back(std::move(ifd));
    offset = next;
  }
  std::vector<io::ByteRange> structure{{0, file->big_tiff_ ? 16u : 8u}};
  for (const Ifd& main : file->ifds_) {
    structure.push_back({main.offset, main.end - main.offset});
    for (const Ifd& sub : main.sub_ifds) structure.push_back({sub.offset, sub.end - sub.offset});
  }
  std::sort(structure.begin(), structure.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  file->structure_ = std::make_shared<const std::vector<io::ByteRange>>(std::move(structure));
  return std::shared_ptr<const TiffFile>(file);
}

}  // namespace tilewise::tiff
