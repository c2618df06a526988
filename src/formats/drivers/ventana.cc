// Ventana / Roche BIF and Ventana TIFF (OpenSlide's "ventana" vendor). OpenSlide 4.0.1's reading, followed
// here:
// - Detection: IFD 0's XMP packet (tag 700) is XML whose root is iScan, or Metadata with an iScan child.
//   Its attributes become ventana.<name> (empty ones left out); Magnification gives the objective power,
//   ScanRes the mpp.
// - Directories whose ImageDescription holds "level=" are levels ("level=N mag=M ..."; levels in order,
//   magnifications decreasing; downsample = level 0's magnification over the level's); "Label Image" or
//   "Label_Image" is the macro, "Thumbnail" the thumbnail.
// - BIF: level 0's XMP is an EncodeInfo document. Each scanned area of interest (SlideStitchInfo/ImageInfo
//   with AOIScanned, its AoiOrigin element giving its first tile column and row in pixels) is a grid of
//   camera tiles (NumCols x NumRows of the TIFF's tile size) whose TileJointInfo entries give the overlap
//   between neighbours, numbered 1.. in a serpentine from the bottom-left (rows from the bottom; every
//   second row right to left). The confidence-weighted mean overlap sets one tile advance for the slide;
//   each area sits at Pos-X and at Pos-Y measured from the bottom of the slide. Tile (c, r) of the level-0
//   grid is drawn at its area's position plus its advance; at a level of downsample d the same positions
//   divided by d draw 1/d-sized parts of that level's tiles (tile (c / d, r / d), part (c % d, r % d)), so
//   overlaps are removed at every level. Tiles are cut at their directory's image edge; where they overlap
//   the later one in row-major order shows. The level's size is the tiles' extent. A positioned level
//   (formats::Placement); positions that are not whole pixels are rounded to the nearest (OpenSlide draws
//   them through cairo at the fraction). openslide.region[i].* give each area's place at level 0.
// - Ventana TIFF: level 0 has no XMP: the levels are plain tile grids.
// - Properties: tiff.* of level 0's directory and its description as openslide.comment; quickhash-1 over the smallest
// level with level 0's strings.
#include <pugixml.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/quickhash.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {
namespace {

// The iScan element of an XMP document, or null.
pugi::xml_node iscan(const pugi::xml_document& doc) {
  pugi::xml_node root = doc.document_element();
  if (std::strcmp(root.name(), "iScan") == 0) return root;
  if (std::strcmp(root.name(), "Metadata") == 0) return root.child("iScan");
  return {};
}

Status parse_initial(const tiff::Ifd& ifd0, pugi::xml_document& doc) {
  if (!ifd0.xmp) return unsupported("no XMP packet");
  if (ifd0.xmp->find("iScan") == std::string::npos) return unsupported("iScan not in XMLPacket");
  pugi::xml_parse_result r = doc.load_buffer(ifd0.xmp->data(), ifd0.xmp->size());
  if (!r) return unsupported(std::string("malformed XMP: ") + r.description());
  if (!iscan(doc)) return unsupported("Couldn't find iScan element in initial XML");
  return Status();
}

Status detect(const Probe& probe) {
  const tiff::TiffFile& tiff = *probe.tiff;
  pugi::xml_document doc;
  return parse_initial(tiff.ifds()[0], doc);
}

Result<int64_t> int_attr(const pugi::xml_node& n, const char* name) {
  auto v = n.attribute(name) ? parse_int64(n.attribute(name).value()) : std::nullopt;
  if (!v) return corrupt(std::string("Can't read attribute ") + name + " of " + n.name());
  return *v;
}

Result<double> double_attr(const pugi::xml_node& n, const char* name) {
  auto v = n.attribute(name) ? parse_double(n.attribute(name).value()) : std::nullopt;
  if (!v) return corrupt(std::string("Can't read attribute ") + name + " of " + n.name());
  return *v;
}

struct Area {
  int64_t x = 0, y = 0, start_col = 0, start_row = 0, across = 0, down = 0;
};

struct Bif {
  std::vector<Area> areas;
  double advance_x = 0, advance_y = 0;
};

// A TileJointInfo tile number (1-based, serpentine from the bottom) as (column, row from the top).
Status tile_position(const Area& a, const pugi::xml_node& joint, const char* attr, int64_t& col, int64_t& row) {
  TW_ASSIGN_OR_RETURN(int64_t tile, int_attr(joint, attr));
  if (tile < 1 || tile > a.across * a.down) return corrupt("Tile number out of bounds: " + std::to_string(tile));
  --tile;
  col = tile % a.across;
  row = tile / a.across;
  if (row % 2) col = a.across - col - 1;
  row = a.down - row - 1;
  return Status();
}

Result<Bif> read_encode_info(const std::string& xml, int64_t tile_w, int64_t tile_h) {
  pugi::xml_document doc;
  pugi::xml_parse_result r = doc.load_buffer(xml.data(), xml.size());
  if (!r) return corrupt(std::string("Parsing level 0 XML: ") + r.description());
  pugi::xml_node encode = doc.child("EncodeInfo");
  std::vector<pugi::xml_node> infos, origins;
  for (pugi::xml_node n : encode.child("SlideStitchInfo").children("ImageInfo")) infos.push_back(n);
  for (pugi::xml_node n : encode.child("AoiOrigin").children()) {
    if (n.type() == pugi::node_element) origins.push_back(n);
  }
  if (infos.empty() || infos.size() != origins.size()) return corrupt("Missing or inconsistent region metadata");
  Bif bif;
  double total_x = 0, total_y = 0;
  int64_t weight_x = 0, weight_y = 0;
  for (size_t i = 0; i < infos.size(); ++i) {
    const pugi::xml_node& info = infos[i];
    TW_ASSIGN_OR_RETURN(int64_t scanned, int_attr(info, "AOIScanned"));
    if (!scanned) continue;
    Area a;
    TW_ASSIGN_OR_RETURN(int64_t ox, int_attr(origins[i], "OriginX"));
    TW_ASSIGN_OR_RETURN(int64_t oy, int_attr(origins[i], "OriginY"));
    TW_ASSIGN_OR_RETURN(int64_t w, int_attr(info, "Width"));
    TW_ASSIGN_OR_RETURN(int64_t h, int_attr(info, "Height"));
    if (w != tile_w || h != tile_h) {
      return corrupt("Tile size mismatch: expected " + std::to_string(tile_w) + "x" + std::to_string(tile_h) +
                     ", found " + std::to_string(w) + "x" + std::to_string(h));
    }
    if (ox % w || oy % h) return corrupt("Area origin not divisible by tile size");
    a.start_col = ox / w;
    a.start_row = oy / h;
    TW_ASSIGN_OR_RETURN(a.across, int_attr(info, "NumCols"));
    TW_ASSIGN_OR_RETURN(a.down, int_attr(info, "NumRows"));
    if (a.across <= 0 || a.down <= 0 || a.across * a.down > (int64_t{1} << 24)) return corrupt("Bad area tile counts");
    TW_ASSIGN_OR_RETURN(double px, double_attr(info, "Pos-X"));
    TW_ASSIGN_OR_RETURN(double py, double_attr(info, "Pos-Y"));
    a.x = static_cast<int64_t>(px);
    a.y = static_cast<int64_t>(py);
    for (pugi::xml_node joint : info.children("TileJointInfo")) {
      int64_t c1, r1, c2, r2;
      TW_RETURN_IF_ERROR(tile_position(a, joint, "Tile1", c1, r1));
      TW_RETURN_IF_ERROR(tile_position(a, joint, "Tile2", c2, r2));
      const std::string direction = joint.attribute("Direction").value();
      bool vertical = false;
      bool ok;
      if (direction == "RIGHT") {
        ok = c2 == c1 + 1 && r2 == r1;
      } else if (direction == "UP") {
        ok = c2 == c1 && r2 == r1 - 1;
        vertical = true;
      } else {
        return corrupt("Bad direction attribute \"" + direction + "\"");
      }
      if (!ok) {
        return corrupt("Unexpected tile join: " + direction + ", (" + std::to_string(c1) + ", " + std::to_string(r1) +
                       "), (" + std::to_string(c2) + ", " + std::to_string(r2) + ")");
      }
      TW_ASSIGN_OR_RETURN(double overlap_x, double_attr(joint, "OverlapX"));
      TW_ASSIGN_OR_RETURN(double overlap_y, double_attr(joint, "OverlapY"));
      TW_ASSIGN_OR_RETURN(int64_t confidence, int_attr(joint, "Confidence"));
      if (vertical) {
        total_y += static_cast<double>(confidence) * -overlap_y;
        weight_y += confidence;
      } else {
        total_x += static_cast<double>(confidence) * -overlap_x;
        weight_x += confidence;
      }
    }
    bif.areas.push_back(a);
  }
  // Without joints (areas of one tile) the tiles abut (OpenSlide would divide by zero).
  bif.advance_x = static_cast<double>(tile_w) + (weight_x ? total_x / static_cast<double>(weight_x) : 0);
  bif.advance_y = static_cast<double>(tile_h) + (weight_y ? total_y / static_cast<double>(weight_y) : 0);
  if (!(bif.advance_x > 0) || !(bif.advance_y > 0)) return corrupt("Tile overlaps are larger than the tiles");
  // Pos-Y is the distance from an area's bottom to a line below every area: measure from the top instead.
  int64_t top = 0;
  std::vector<int64_t> heights;
  for (const Area& a : bif.areas) {
    heights.push_back(
        static_cast<int64_t>(static_cast<double>(a.down - 1) * bif.advance_y + static_cast<double>(tile_h)));
    top = std::max(top, a.y + heights.back());
  }
  for (size_t i = 0; i < bif.areas.size(); ++i) bif.areas[i].y = top - bif.areas[i].y - heights[i];
  return bif;
}

// A BIF level: the level-0 tile grid's positions scaled by 1/ds, each drawing a 1/ds part of this level's
// directory's tiles.
Result<LevelModel> bif_level(const tiff::TiffFile& tiff, const tiff::Ifd& ifd, const Bif& bif, double ds,
                             std::vector<std::string>& warnings) {
  TW_ASSIGN_OR_RETURN(LevelModel level, build_level(tiff, ifd));
  const int64_t tw = level.desc.width, th = level.desc.height;
  const int64_t subtiles = static_cast<int64_t>(ds);
  if (subtiles < 1) return corrupt("Unexpected downsample " + format_double(ds));
  const double sw = static_cast<double>(tw) / ds, sh = static_cast<double>(th) / ds;
  const double adv_x = bif.advance_x / ds, adv_y = bif.advance_y / ds;
  std::map<std::pair<int64_t, int64_t>, PlacedTile> cells;  // (row, col): one tile each, the last area's
  double right = 0, bottom = 0;
  int64_t outside = 0;
  for (const Area& a : bif.areas) {
    const double off_x = (static_cast<double>(a.x) - static_cast<double>(a.start_col) * bif.advance_x) / ds;
    const double off_y = (static_cast<double>(a.y) - static_cast<double>(a.start_row) * bif.advance_y) / ds;
    for (int64_t row = a.start_row; row < a.start_row + a.down; ++row) {
      for (int64_t col = a.start_col; col < a.start_col + a.across; ++col) {
        const double x = static_cast<double>(col) * adv_x + off_x, y = static_cast<double>(row) * adv_y + off_y;
        right = std::max(right, x + sw);
        bottom = std::max(bottom, y + sh);
        const int64_t tc = col / subtiles, tr = row / subtiles;
        if (tc >= level.tiles_across || tr >= level.tiles_down) {
          ++outside;
          continue;
        }
        PlacedTile t;
        t.x = std::llround(x);
        t.y = std::llround(y);
        t.src_x = static_cast<int32_t>(std::llround(static_cast<double>(col % subtiles) * sw));
        t.src_y = static_cast<int32_t>(std::llround(static_cast<double>(row % subtiles) * sh));
        // The part's size, cut at the directory's image edge (its padding is not drawn).
        const int64_t valid_w = std::min<int64_t>(tw, int64_t{ifd.width} - tc * tw) - t.src_x;
        const int64_t valid_h = std::min<int64_t>(th, int64_t{ifd.height} - tr * th) - t.src_y;
        t.width = static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(std::ceil(sw)), valid_w));
        t.height = static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(std::ceil(sh)), valid_h));
        t.unit = tr * level.tiles_across + tc;
        if (t.width <= 0 || t.height <= 0 || level.unit_length(t.unit) == 0) {
          cells.erase({row, col});
          continue;
        }
        cells[{row, col}] = t;
      }
    }
  }
  if (outside) {
    warnings.push_back(describe_ifd(ifd) + ": " + std::to_string(outside) +
                       " tiles of the areas lie outside the directory");
  }
  std::vector<PlacedTile> placed;
  placed.reserve(cells.size());
  for (const auto& [cell, t] : cells) placed.push_back(t);
  level.info.width = static_cast<int64_t>(std::ceil(right));
  level.info.height = static_cast<int64_t>(std::ceil(bottom));
  level.placement = make_placement(std::move(placed));
  return level;
}

struct LevelInfoText {
  int64_t level = 0;
  double magnification = 0;
};

Result<LevelInfoText> level_info(const std::string& desc) {
  std::map<std::string, std::string> fields;
  for (const std::string& pair : split(desc, ' ')) {
    const size_t eq = pair.find('=');
    if (eq != std::string::npos) fields[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  if (!fields.count("level") || !fields.count("mag")) return corrupt("Missing level field");
  auto level = parse_int64(fields["level"]);
  if (!level) return corrupt("Invalid level number");
  auto mag = parse_double(fields["mag"]);
  if (!mag) return corrupt("Invalid magnification");
  return LevelInfoText{*level, *mag};
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const tiff::TiffFile>& tiff = probe.tiff;
  pugi::xml_document doc;
  TW_RETURN_IF_ERROR(parse_initial(tiff->ifds()[0], doc));
  PropertyMap props;
  for (pugi::xml_attribute a : iscan(doc).attributes()) {
    if (*a.value()) props[std::string("ventana.") + a.name()] = a.value();
  }
  if (auto m = props.find("ventana.Magnification"); m != props.end()) {
    if (auto v = parse_int64(m->second)) props["openslide.objective-power"] = std::to_string(*v);
  }
  if (auto r = props.find("ventana.ScanRes"); r != props.end()) {
    if (auto v = parse_double(r->second)) props["openslide.mpp-x"] = props["openslide.mpp-y"] = format_double(*v);
  }

  SlideModel model;
  model.vendor = "ventana";
  model.tiff = tiff;
  std::optional<Bif> bif;
  int64_t next_level = 0;
  double previous_mag = INFINITY, mag0 = 0;
  std::vector<std::pair<const tiff::Ifd*, LevelModel>> levels;
  for (const tiff::Ifd& ifd : tiff->ifds()) {
    if (!ifd.image_description) continue;
    const std::string& desc = *ifd.image_description;
    if (desc.find("level=") != std::string::npos) {
      TW_ASSIGN_OR_RETURN(LevelInfoText info, level_info(desc));
      if (info.level != next_level++) return corrupt("Unexpected encounter with level " + std::to_string(info.level));
      if (info.magnification >= previous_mag) {
        return corrupt("Unexpected magnification in level " + std::to_string(info.level));
      }
      previous_mag = info.magnification;
      if (info.level == 0) mag0 = info.magnification;
      const double ds = mag0 / info.magnification;
      if (!ifd.tiled) return corrupt("Directory " + std::to_string(ifd.index) + " is not tiled");
      if (info.level == 0 && ifd.xmp) {
        TW_ASSIGN_OR_RETURN(bif, read_encode_info(*ifd.xmp, ifd.chunk_width, ifd.chunk_height));
      }
      if (!levels.empty() &&
          (ifd.chunk_width != levels[0].first->chunk_width || ifd.chunk_height != levels[0].first->chunk_height)) {
        return corrupt("Inconsistent TIFF tile sizes");
      }
      LevelModel level;
      if (bif) {
        TW_ASSIGN_OR_RETURN(level, bif_level(*tiff, ifd, *bif, ds, model.warnings));
      } else {
        TW_ASSIGN_OR_RETURN(level, build_level(*tiff, ifd));
      }
      level.info.downsample = ds;
      levels.emplace_back(&ifd, std::move(level));
    } else if (desc == "Label Image" || desc == "Label_Image") {
      add_associated_image(model, "macro", ifd);
    } else if (desc == "Thumbnail") {
      add_associated_image(model, "thumbnail", ifd);
    }
  }
  if (levels.empty()) return corrupt("No pyramid levels in slide");
  std::stable_sort(levels.begin(), levels.end(),
                   [](const auto& a, const auto& b) { return a.first->width > b.first->width; });
  for (auto& [ifd, level] : levels) model.levels.push_back(std::move(level));
  const tiff::Ifd& level0 = *levels.front().first;
  if (bif) {
    const int64_t tw = level0.chunk_width, th = level0.chunk_height;
    for (size_t i = 0; i < bif->areas.size(); ++i) {
      const Area& a = bif->areas[i];
      const std::string p = "openslide.region[" + std::to_string(i) + "].";
      props[p + "x"] = std::to_string(static_cast<int64_t>(bif->advance_x * static_cast<double>(a.start_col)));
      props[p + "y"] = std::to_string(static_cast<int64_t>(bif->advance_y * static_cast<double>(a.start_row)));
      props[p + "width"] = std::to_string(static_cast<int64_t>(
          std::ceil(bif->advance_x * static_cast<double>(a.across - 1) + static_cast<double>(tw))));
      props[p + "height"] = std::to_string(
          static_cast<int64_t>(std::ceil(bif->advance_y * static_cast<double>(a.down - 1) + static_cast<double>(th))));
    }
  }
  add_tiff_properties(level0, props);
  if (level0.image_description) props["openslide.comment"] = *level0.image_description;
  model.icc_profile = level0.icc_profile;
  auto hash = quickhash1(*tiff, *levels.back().first, level0);
  if (!hash.ok()) return hash.status().with_context("Can't hash the smallest level");
  if (*hash) props["openslide.quickhash-1"] = **hash;
  for (LevelModel& l : model.levels) l.ifd = nullptr;  // the hash is this driver's
  add_standard_properties(model, props);
  if (bif) {  // positioned levels have no one tile size: OpenSlide gives none
    drop_tile_size_properties(model);
  }
  return model;
}

}  // namespace

const FormatDriver kVentanaDriver = {"ventana", Reads::kTiff, &detect, &open};

}  // namespace tilewise::formats
