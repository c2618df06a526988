// Turns a TIFF directory into a LevelModel: maps compression/photometric/sample tags to a codec
// TileDesc, refuses layouts the decoders cannot handle (Unsupported, naming what is missing) and decode
// units above the configured size limit.
#pragma once

#include "formats/slide_model.h"
#include "tiff/ifd.h"
#include "tiff/tiff_file.h"
#include "tilewise/status.h"

namespace tilewise::formats {

// The level of directory `ifd` of `tiff`: its tiles or strips are the level's units, as stored.
Result<LevelModel> build_level(const tiff::TiffFile& tiff, const tiff::Ifd& ifd, const ModelLimits& limits = {});

// As build_level, for a level read as its own samples (channels at their bit depth), which need not have an
// RGB rendering: any number of interleaved samples, signed, float and 32-bit samples.
Result<LevelModel> build_sample_level(const tiff::TiffFile& tiff, const tiff::Ifd& ifd, const ModelLimits& limits = {});

// build_level for each directory, then compute_downsamples; the first directory is level 0.
Result<std::vector<LevelModel>> build_levels(const tiff::TiffFile& tiff, const std::vector<const tiff::Ifd*>& ifds,
                                             const ModelLimits& limits = {});

// The codec description of a directory's chunks (compression, photometric, samples), refusing what the
// decoders cannot handle; `where` names the directory in errors.
Result<codecs::TileDesc> describe_chunks(const tiff::Ifd& ifd, const std::string& where);

// Adds the directory as associated image `name`; when it cannot be read (unsupported codec, huge), records
// a warning instead: associated images never stop a slide from opening.
void add_associated_image(SlideModel& model, const std::string& name, const tiff::Ifd& ifd);

// A JPEG stored whole at [offset, offset + length) of `source` as a one-unit level (associated images of
// MIRAX, Trestle, Sakura, Zeiss): its size from its header; Corrupt when the range runs past the source or
// the header has no size, Unsupported when the image exceeds the decode-unit limit.
Result<LevelModel> whole_jpeg_level(std::shared_ptr<const io::Source> source, uint64_t offset, uint64_t length);

// Sets every level's downsample from level 0, as OpenSlide does: the mean of the width and height ratios.
void compute_downsamples(std::vector<LevelModel>& levels);

// A human-readable location of a directory for error messages: "IFD 3" or "IFD 0 SubIFD 2".
std::string describe_ifd(const tiff::Ifd& ifd);

}  // namespace tilewise::formats
