// Leica SCN (OpenSlide's "leica" vendor): a tiled BigTIFF whose first ImageDescription is an XML document
// in the namespace http://www.leica-microsystems.com/scn/2010/10/01 (or .../2010/03/10):
//   scn / collection (sizeX, sizeY in nanometres; barcode) / image* (view: sizeX, sizeY, offsetX,
//   offsetY in nanometres; pixels / dimension*: sizeX, sizeY, ifd, optional z (focal plane); creationDate,
//   device model/version, scanSettings: objective, numericalAperture, illuminationSource).
// OpenSlide 4.0.1's reading, followed here: an image whose view is the whole collection at (0, 0) is a
// macro image, the others are main images; only brightfield images count; dimensions of focal planes
// other than 0 are left out, the rest sorted by width, largest first. Every brightfield main image must have
// the first one's objective and dimension count, and dimension k of each is level k (resolutions within
// 2%). A level is the collection's extent at the finest resolution of its dimensions (its size: the
// collection's nanometres over nanometres per pixel, rounded up), each main image's directory drawn at its
// view offset: a positioned level (formats::Placement) of those directories' tiles, each cut at its image's
// edge, the first image's pixels on top where images overlap; the rest is background. The macro image's
// largest dimension is the associated image "macro".
// Fluorescence images (illuminationSource "fluorescence"; OpenSlide leaves them out) are scenes after the
// brightfield composite, or the slide when it has no brightfield main image: each dimension's c and z
// attributes name its channel and focal plane, channel names come from scanSettings/channelSettings, and the
// image is read alone at its own size and sample type (as tifffile reads it), not placed on the collection.
// Properties: leica.barcode (the XML's base64 decoded, as GLib decodes it), and of the first main image leica.aperture,
// leica.creation-date, leica.device-model, leica.device-version, leica.illumination-source, leica.objective (and the
// objective power); the tiff.* tags of level 0's first directory less ImageDescription; mpp from its resolution
// (centimetres); openslide.barcode, openslide.region[i].* (each main image at level 0) and
// openslide.bounds-* (their union), as OpenSlide 4.0.1 reports them (measured); quickhash-1 over the smallest dimension
// of the main image where the slide has one brightfield main image and at most one macro image, else over the macro
// image's smallest dimension. An offset that is not a whole pixel of a level is truncated, as OpenSlide places it.
#include <pugixml.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/quickhash.h"
#include "formats/tiff_properties.h"

namespace tilewise::formats {
namespace {

constexpr const char* kNamespaces[] = {"http://www.leica-microsystems.com/scn/2010/10/01",
                                       "http://www.leica-microsystems.com/scn/2010/03/10"};

const char* namespace_in(const std::string& text) {
  for (const char* ns : kNamespaces) {
    if (text.find(ns) != std::string::npos) return ns;
  }
  return nullptr;
}

Status parse(const tiff::Ifd& ifd0, pugi::xml_document& doc) {
  if (!ifd0.image_description || !namespace_in(*ifd0.image_description)) return unsupported("Not a Leica slide");
  const std::string& xml = *ifd0.image_description;
  pugi::xml_parse_result r = doc.load_buffer(xml.data(), xml.size());
  if (!r) return corrupt(std::string("malformed XML: ") + r.description() + " at byte " + std::to_string(r.offset));
  const std::string ns = doc.document_element().attribute("xmlns").value();
  if (ns != kNamespaces[0] && ns != kNamespaces[1]) return unsupported("Unexpected XML namespace");
  return Status();
}

Status detect(const Probe& probe) {
  const tiff::TiffFile& tiff = *probe.tiff;
  const tiff::Ifd& ifd0 = tiff.ifds()[0];
  if (!ifd0.tiled) return unsupported("TIFF is not tiled");
  pugi::xml_document doc;
  return parse(ifd0, doc);
}

struct Dimension {
  int64_t dir = 0, width = 0, height = 0;
  double nm_per_pixel = 0;
  int32_t c = 0, z = 0;
};

struct Image {
  std::string creation_date, device_model, device_version, illumination, objective, aperture;
  bool has_illumination = false, has_objective = false, has_aperture = false, has_date = false, has_model = false,
       has_version = false;
  bool macro = false;
  std::string name;
  int64_t width_nm = 0, height_nm = 0, x_nm = 0, y_nm = 0;
  std::vector<Dimension> dims;    // of channel 0 at focal plane 0, largest first
  std::vector<Dimension> planes;  // every dimension, as listed
  std::map<int32_t, std::string> channel_names;  // scanSettings/channelSettings/channel (index, name)
  bool brightfield() const { return has_illumination && illumination == "brightfield"; }
  bool fluorescence() const { return has_illumination && illumination == "fluorescence"; }
};

Result<int64_t> int_attribute(const pugi::xml_node& node, const char* name) {
  pugi::xml_attribute a = node.attribute(name);
  auto v = a ? parse_int64(a.value()) : std::nullopt;
  if (!v) return corrupt(std::string("Can't parse ") + name + " attribute of " + node.name());
  return *v;
}

// Text of the first element at `path` (child names separated by '/'), if there is one.
bool text_at(pugi::xml_node node, const char* path, std::string& out) {
  for (const std::string& part : split(path, '/')) {
    node = node.child(part.c_str());
    if (!node) return false;
  }
  out = node.text().get();
  return true;
}

struct Collection {
  std::string barcode;
  bool has_barcode = false;
  int64_t width_nm = 0, height_nm = 0;
  std::vector<Image> images;
};

Result<Collection> read_collection(const pugi::xml_document& doc) {
  pugi::xml_node c = doc.document_element().child("collection");
  if (!c) return corrupt("Can't find collection element");
  Collection col;
  col.has_barcode = text_at(c, "barcode", col.barcode);
  TW_ASSIGN_OR_RETURN(col.width_nm, int_attribute(c, "sizeX"));
  TW_ASSIGN_OR_RETURN(col.height_nm, int_attribute(c, "sizeY"));
  for (pugi::xml_node in : c.children("image")) {
    pugi::xml_node view = in.child("view");
    if (!view) return corrupt("Can't find view node");
    Image image;
    image.has_date = text_at(in, "creationDate", image.creation_date);
    if (pugi::xml_node d = in.child("device")) {
      if (pugi::xml_attribute a = d.attribute("model")) image.device_model = a.value(), image.has_model = true;
      if (pugi::xml_attribute a = d.attribute("version")) image.device_version = a.value(), image.has_version = true;
    }
    image.has_illumination = text_at(in, "scanSettings/illuminationSettings/illuminationSource", image.illumination);
    image.has_objective = text_at(in, "scanSettings/objectiveSettings/objective", image.objective);
    image.has_aperture = text_at(in, "scanSettings/illuminationSettings/numericalAperture", image.aperture);
    TW_ASSIGN_OR_RETURN(image.width_nm, int_attribute(view, "sizeX"));
    TW_ASSIGN_OR_RETURN(image.height_nm, int_attribute(view, "sizeY"));
    TW_ASSIGN_OR_RETURN(image.x_nm, int_attribute(view, "offsetX"));
    TW_ASSIGN_OR_RETURN(image.y_nm, int_attribute(view, "offsetY"));
    image.macro =
        image.x_nm == 0 && image.y_nm == 0 && image.width_nm == col.width_nm && image.height_nm == col.height_nm;
    image.name = in.attribute("name").value();
    for (pugi::xml_node ch : in.child("scanSettings").child("channelSettings").children("channel")) {
      if (auto index = parse_int64(ch.attribute("index").value()); index && *index >= 0 && *index < 4096) {
        image.channel_names[static_cast<int32_t>(*index)] = ch.attribute("name").value();
      }
    }
    pugi::xml_node pixels = in.child("pixels");
    for (pugi::xml_node d : pixels.children("dimension")) {
      Dimension dim;
      TW_ASSIGN_OR_RETURN(dim.dir, int_attribute(d, "ifd"));
      TW_ASSIGN_OR_RETURN(dim.width, int_attribute(d, "sizeX"));
      TW_ASSIGN_OR_RETURN(dim.height, int_attribute(d, "sizeY"));
      if (dim.width <= 0 || dim.height <= 0) return corrupt("Dimension size is not positive");
      dim.nm_per_pixel = static_cast<double>(image.width_nm) / static_cast<double>(dim.width);
      for (auto [name, index] : {std::pair{"c", &dim.c}, std::pair{"z", &dim.z}}) {
        if (!d.attribute(name)) continue;
        auto v = parse_int64(d.attribute(name).value());
        if (!v || *v < 0 || *v >= 4096) return corrupt(std::string("Can't parse ") + name + " attribute of dimension");
        *index = static_cast<int32_t>(*v);
      }
      image.planes.push_back(dim);
      if (dim.z == 0 && dim.c == 0) image.dims.push_back(dim);
    }
    if (image.dims.empty()) return corrupt("Can't find any dimensions in image");
    std::stable_sort(image.dims.begin(), image.dims.end(),
                     [](const Dimension& a, const Dimension& b) { return a.width > b.width; });
    col.images.push_back(std::move(image));
  }
  if (col.images.empty()) return corrupt("Can't find any images");
  return col;
}

Result<const tiff::Ifd*> directory(const tiff::TiffFile& tiff, int64_t dir) {
  if (dir < 0 || dir >= static_cast<int64_t>(tiff.ifds().size()) ||
      tiff.ifds()[static_cast<size_t>(dir)].index != dir) {
    return corrupt("No TIFF directory " + std::to_string(dir));
  }
  return &tiff.ifds()[static_cast<size_t>(dir)];
}

bool same_layout(const codecs::TileDesc& a, const codecs::TileDesc& b) {
  return a.compression == b.compression && a.width == b.width && a.height == b.height &&
         a.samples_per_pixel == b.samples_per_pixel && a.bits_per_sample == b.bits_per_sample && a.color == b.color &&
         a.predictor == b.predictor && a.jpeg_tables.size() == b.jpeg_tables.size() &&
         std::equal(a.jpeg_tables.begin(), a.jpeg_tables.end(), b.jpeg_tables.begin());
}

// An image's offset in a level's pixels: truncated toward zero (measured: OpenSlide 4.0.1 draws an image
// whose offset is 37.4 pixels from pixel 37, whichever region is read).
int64_t pixel_offset(int64_t nm, double nm_per_pixel) {
  return static_cast<int64_t>(static_cast<double>(nm) / nm_per_pixel);
}

// Level k: dimension k of every main image, each directory's tiles placed at its image's offset.
Result<LevelModel> compose_level(const tiff::TiffFile& tiff, const Collection& col,
                                 const std::vector<const Image*>& mains, size_t k) {
  double nm_per_pixel = mains[0]->dims[k].nm_per_pixel;
  for (const Image* m : mains) nm_per_pixel = std::min(nm_per_pixel, m->dims[k].nm_per_pixel);
  std::vector<LevelModel> areas;
  for (const Image* m : mains) {
    TW_ASSIGN_OR_RETURN(const tiff::Ifd* ifd, directory(tiff, m->dims[k].dir));
    TW_ASSIGN_OR_RETURN(LevelModel area, build_level(tiff, *ifd));
    if (!areas.empty() && !same_layout(area.desc, areas[0].desc)) {
      return unsupported("main images of level " + std::to_string(k) + " differ in tile size or compression");
    }
    areas.push_back(std::move(area));
  }
  LevelModel level = areas[0];
  level.info.width = static_cast<int64_t>(std::ceil(static_cast<double>(col.width_nm) / nm_per_pixel));
  level.info.height = static_cast<int64_t>(std::ceil(static_cast<double>(col.height_nm) / nm_per_pixel));
  // Units: each area's tile grid on rows of its own (so that errors name an area's tile as (col, row)).
  int64_t across = 0;
  for (const LevelModel& a : areas) across = std::max(across, a.tiles_across);
  UnitTable table;
  // Paint order: where main images overlap, the first one's pixels show (measured: OpenSlide 4.0.1 paints
  // the images in order and its reads saturate, so that an opaque pixel painted first stays), so the
  // placement, where the later tile shows, lists the images last to first.
  std::vector<std::vector<PlacedTile>> placed_by_image(areas.size());
  int64_t row0 = 0;
  for (size_t i = 0; i < areas.size(); ++i) {
    std::vector<PlacedTile>& placed = placed_by_image[i];
    const LevelModel& a = areas[i];
    const int64_t ox = pixel_offset(mains[i]->x_nm, nm_per_pixel), oy = pixel_offset(mains[i]->y_nm, nm_per_pixel);
    for (int64_t r = 0; r < a.tiles_down; ++r) {
      for (int64_t c = 0; c < across; ++c) {
        const bool inside = c < a.tiles_across;
        table.offsets.push_back(inside ? a.unit_offset(r * a.tiles_across + c) : 0);
        table.lengths.push_back(inside ? a.unit_length(r * a.tiles_across + c) : 0);
        if (!inside || table.lengths.back() == 0) continue;
        PlacedTile t;
        t.x = ox + c * a.desc.width;
        t.y = oy + r * a.desc.height;
        // Cut at the image's edge (the tile's padding is not drawn).
        t.width = static_cast<int32_t>(std::min<int64_t>(a.desc.width, a.info.width - c * a.desc.width));
        t.height = static_cast<int32_t>(std::min<int64_t>(a.desc.height, a.info.height - r * a.desc.height));
        t.unit = (row0 + r) * across + c;
        placed.push_back(t);
      }
    }
    row0 += a.tiles_down;
  }
  std::vector<PlacedTile> placed;
  for (auto it = placed_by_image.rbegin(); it != placed_by_image.rend(); ++it) {
    placed.insert(placed.end(), it->begin(), it->end());
  }
  level.tiles_across = across;
  level.tiles_down = row0;
  level.units = std::make_shared<const UnitTable>(std::move(table));
  level.placement = make_placement(std::move(placed));
  level.ifd = nullptr;  // quickhash-1 is this driver's (a level is several directories)
  return level;
}

// A fluorescence image (OpenSlide leaves them out): each (channel, focal plane) a plane whose dimensions,
// largest first, are its levels (every plane of channel 0 at focal plane 0's sizes), read at their own
// sample type; the channels named by scanSettings/channelSettings.
Status add_fluorescence(const tiff::TiffFile& tiff, const Image& image, SlideModel& model) {
  std::map<std::pair<int32_t, int32_t>, std::vector<Dimension>> by_plane;  // (z, c) -> dimensions
  int32_t channels = 0, zs = 0;
  for (const Dimension& d : image.planes) {
    by_plane[{d.z, d.c}].push_back(d);
    channels = std::max(channels, d.c + 1), zs = std::max(zs, d.z + 1);
  }
  const std::string what = "fluorescence image " + image.name;
  if (by_plane.size() != static_cast<size_t>(channels) * static_cast<size_t>(zs)) {
    return corrupt(what + ": dimensions for " + std::to_string(by_plane.size()) + " of its " + std::to_string(channels) +
                   " channels x " + std::to_string(zs) + " focal planes");
  }
  for (auto& [key, dims] : by_plane) {
    const auto [z, c] = key;
    const std::string plane = what + " channel " + std::to_string(c) + " focal plane " + std::to_string(z);
    std::stable_sort(dims.begin(), dims.end(), [](const Dimension& a, const Dimension& b) { return a.width > b.width; });
    if (dims.size() != image.dims.size()) {
      return corrupt(plane + ": " + std::to_string(dims.size()) + " resolutions, channel 0 has " + std::to_string(image.dims.size()));
    }
    std::vector<LevelModel> levels;
    for (size_t k = 0; k < dims.size(); ++k) {
      TW_ASSIGN_OR_RETURN(const tiff::Ifd* ifd, directory(tiff, dims[k].dir));
      auto level = build_sample_level(tiff, *ifd);
      if (!level.ok()) return level.status().with_context(plane);
      if (level->info.width != image.dims[k].width || level->info.height != image.dims[k].height) {
        return corrupt(plane + ": resolution " + std::to_string(k) + " is not channel 0's size");
      }
      levels.push_back(std::move(level).value());
    }
    compute_downsamples(levels);
    if (model.planes.empty()) model.levels = levels;
    model.planes.push_back({c, 1, z, 0, std::move(levels)});
  }
  ImageAxes& axes = model.axes;
  axes.rgb = false;
  axes.channels = channels;
  axes.z = zs;
  TW_ASSIGN_OR_RETURN(axes.sample_type, sample_type_of(model.levels[0].desc));
  for (int32_t c = 0; c < channels; ++c) {
    ChannelInfo info;
    auto name = image.channel_names.find(c);
    info.name = name != image.channel_names.end() && !name->second.empty() ? name->second : "C" + std::to_string(c);
    axes.channel_info.push_back(std::move(info));
  }
  return Status();
}

// openslide.region[i].*: each main image's place at level 0; openslide.bounds-*: their union.
void add_region_properties(const std::vector<const Image*>& mains, PropertyMap& props) {
  double npp0 = mains[0]->dims[0].nm_per_pixel;
  for (const Image* m : mains) npp0 = std::min(npp0, m->dims[0].nm_per_pixel);
  int64_t bx0 = INT64_MAX, by0 = INT64_MAX, bx1 = INT64_MIN, by1 = INT64_MIN;
  for (size_t i = 0; i < mains.size(); ++i) {
    const int64_t x = pixel_offset(mains[i]->x_nm, npp0), y = pixel_offset(mains[i]->y_nm, npp0);
    const int64_t w = mains[i]->dims[0].width, h = mains[i]->dims[0].height;
    const std::string p = "openslide.region[" + std::to_string(i) + "].";
    props[p + "x"] = std::to_string(x);
    props[p + "y"] = std::to_string(y);
    props[p + "width"] = std::to_string(w);
    props[p + "height"] = std::to_string(h);
    bx0 = std::min(bx0, x), by0 = std::min(by0, y), bx1 = std::max(bx1, x + w), by1 = std::max(by1, y + h);
  }
  props["openslide.bounds-x"] = std::to_string(bx0);
  props["openslide.bounds-y"] = std::to_string(by0);
  props["openslide.bounds-width"] = std::to_string(bx1 - bx0);
  props["openslide.bounds-height"] = std::to_string(by1 - by0);
}

// The scenes of a slide with fluorescence images: the brightfield composite first (OpenSlide's slide), when
// there is one, then each fluorescence image; none without fluorescence images.
std::vector<SceneInfo> scenes_of(const Collection& col, const std::vector<const Image*>& mains,
                                 const std::vector<const Image*>& fluorescent) {
  std::vector<SceneInfo> scenes;
  if (fluorescent.empty()) return scenes;
  if (!mains.empty()) {
    double npp0 = mains[0]->dims[0].nm_per_pixel;
    for (const Image* m : mains) npp0 = std::min(npp0, m->dims[0].nm_per_pixel);
    scenes.push_back({"brightfield", static_cast<int64_t>(std::ceil(static_cast<double>(col.width_nm) / npp0)),
                      static_cast<int64_t>(std::ceil(static_cast<double>(col.height_nm) / npp0))});
  }
  for (const Image* f : fluorescent) {
    scenes.push_back({f->name.empty() ? "fluorescence " + std::to_string(scenes.size()) : f->name, f->dims[0].width,
                      f->dims[0].height});
  }
  return scenes;
}

Result<SlideModel> open(const Probe& probe) {
  const std::shared_ptr<const tiff::TiffFile>& tiff = probe.tiff;
  pugi::xml_document doc;
  TW_RETURN_IF_ERROR(parse(tiff->ifds()[0], doc));
  TW_ASSIGN_OR_RETURN(Collection col, read_collection(doc));
  PropertyMap props;
  if (col.has_barcode) {  // base64 in the XML; OpenSlide keeps the decoded bytes up to a NUL, none when empty
    std::string decoded = glib_base64_decode(col.barcode);
    decoded.resize(std::min(decoded.size(), decoded.find('\0')));
    if (!decoded.empty()) props["leica.barcode"] = decoded;
  }
  // Legacy quickhash: one brightfield main image and at most one macro image.
  int brightfield_mains = 0, macros = 0;
  bool other_mains = false;
  std::vector<const Image*> mains, fluorescent;
  for (const Image& image : col.images) {
    if (image.macro) {
      ++macros;
      continue;
    }
    if (!image.brightfield()) {
      other_mains = true;
      // (grey directories only: an RGB image called fluorescence is left out, as OpenSlide leaves it)
      auto dir = directory(*tiff, image.dims.front().dir);
      if (image.fluorescence() && dir.ok() && (*dir)->samples_per_pixel == 1) fluorescent.push_back(&image);
      continue;
    }
    ++brightfield_mains;
    if (!mains.empty()) {
      const Image& first = *mains[0];
      if (image.illumination != first.illumination || image.objective != first.objective ||
          image.dims.size() != first.dims.size()) {
        return corrupt("Slides with dissimilar main images are not supported");
      }
      for (size_t k = 0; k < image.dims.size(); ++k) {
        const double want = first.dims[k].nm_per_pixel;
        if (1 - std::fabs(image.dims[k].nm_per_pixel - want) / want < 0.98)
          return corrupt("Inconsistent main image resolutions");
      }
    }
    mains.push_back(&image);
  }
  if (mains.empty() && fluorescent.empty()) return corrupt("Can't find main image");
  SlideModel model;
  model.scenes = scenes_of(col, mains, fluorescent);
  // The image this model is: the brightfield composite (scene 0, OpenSlide's) or a fluorescence image.
  const size_t scene = probe.scene && static_cast<size_t>(*probe.scene) < model.scenes.size() ? *probe.scene : 0;
  const Image* fluorescence = nullptr;
  if (mains.empty() || scene > 0) fluorescence = fluorescent[mains.empty() ? scene : scene - 1];
  const bool legacy_hash = !other_mains && brightfield_mains == 1 && macros <= 1;
  const Image& first = fluorescence ? *fluorescence : *mains[0];
  auto put = [&](const char* key, bool has, const std::string& v) {
    if (has) props[key] = v;
  };
  put("leica.aperture", first.has_aperture, first.aperture);
  put("leica.creation-date", first.has_date, first.creation_date);
  put("leica.device-model", first.has_model, first.device_model);
  put("leica.device-version", first.has_version, first.device_version);
  put("leica.illumination-source", first.has_illumination, first.illumination);
  put("leica.objective", first.has_objective, first.objective);
  if (first.has_objective) {
    if (auto v = parse_int64(first.objective)) props["openslide.objective-power"] = std::to_string(*v);
  }

  model.vendor = "leica";
  model.tiff = tiff;
  if (fluorescence) {
    TW_RETURN_IF_ERROR(add_fluorescence(*tiff, *fluorescence, model));
  } else {
    for (size_t k = 0; k < first.dims.size(); ++k) {
      TW_ASSIGN_OR_RETURN(LevelModel level, compose_level(*tiff, col, mains, k));
      model.levels.push_back(std::move(level));
    }
    compute_downsamples(model.levels);
  }

  const tiff::Ifd* hash_ifd = nullptr;
  if (legacy_hash) {
    TW_ASSIGN_OR_RETURN(hash_ifd, directory(*tiff, first.dims.back().dir));
  }
  bool have_macro = false;
  for (const Image& image : col.images) {
    if (!image.macro || !image.brightfield()) continue;
    if (have_macro) return corrupt("Found multiple macro images");
    have_macro = true;
    TW_ASSIGN_OR_RETURN(const tiff::Ifd* largest, directory(*tiff, image.dims.front().dir));
    auto macro = build_level(*tiff, *largest);
    if (!macro.ok()) return macro.status().with_context("macro image");
    model.associated.push_back({"macro", std::move(macro).value(), {}, {}});
    if (!legacy_hash) {
      TW_ASSIGN_OR_RETURN(hash_ifd, directory(*tiff, image.dims.back().dir));
    }
  }
  if (!hash_ifd && fluorescence) {  // no macro image: the fluorescence image's smallest dimension
    TW_ASSIGN_OR_RETURN(hash_ifd, directory(*tiff, first.dims.back().dir));
  }
  if (!hash_ifd) return corrupt("Couldn't locate TIFF directory for quickhash");

  if (!fluorescence) add_region_properties(mains, props);
  if (props.count("leica.barcode")) props["openslide.barcode"] = props["leica.barcode"];

  TW_ASSIGN_OR_RETURN(const tiff::Ifd* property_ifd, directory(*tiff, first.dims.front().dir));
  add_tiff_properties(*property_ifd, props);
  props.erase("tiff.ImageDescription");
  add_mpp_from_resolution(*property_ifd, props);
  model.icc_profile = property_ifd->icc_profile;
  auto hash = quickhash1(*tiff, *hash_ifd, *property_ifd);
  if (!hash.ok()) return hash.status().with_context("Can't hash the quickhash directory");
  if (*hash) props["openslide.quickhash-1"] = **hash;
  add_standard_properties(model, props);
  // A level of several directories has no one tile size: OpenSlide gives none (measured).
  if (!fluorescence) drop_tile_size_properties(model);
  return model;
}

}  // namespace

const FormatDriver kLeicaDriver = {"leica", Reads::kTiff, &detect, &open};

}  // namespace tilewise::formats
