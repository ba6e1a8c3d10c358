#include "core/geohash.h"

#include <cmath>

namespace shardis::core::geohash {

namespace {

constexpr double kDegToRad = M_PI / 180.0;
constexpr double kMercatorMax = 20037726.37;
constexpr Range kLonRange{kLonMin, kLonMax};
constexpr Range kLatRange{kLatMin, kLatMax};

double DegRad(double ang) { return ang * kDegToRad; }
double RadDeg(double ang) { return ang / kDegToRad; }

// Spreads the 32 bits of v over the even bits of the result.
uint64_t Spread(uint32_t v) {
  uint64_t x = v;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x << 2)) & 0x3333333333333333ULL;
  x = (x | (x << 1)) & 0x5555555555555555ULL;
  return x;
}
// The inverse of Spread: gathers the even bits of x.
uint32_t Gather(uint64_t x) {
  x &= 0x5555555555555555ULL;
  x = (x | (x >> 1)) & 0x3333333333333333ULL;
  x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x >> 4)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x >> 8)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x >> 16)) & 0x00000000FFFFFFFFULL;
  return static_cast<uint32_t>(x);
}

// Moves a cell one step east (d > 0) or west along the odd (longitude) bits, wrapping around.
void MoveX(Bits* h, int d) {
  uint64_t x = h->bits & 0xaaaaaaaaaaaaaaaaULL;
  const uint64_t y = h->bits & 0x5555555555555555ULL;
  const uint64_t zz = 0x5555555555555555ULL >> (64 - h->step * 2);
  if (d > 0) {
    x = x + (zz + 1);
  } else {
    x = x | zz;
    x = x - (zz + 1);
  }
  x &= (0xaaaaaaaaaaaaaaaaULL >> (64 - h->step * 2));
  h->bits = x | y;
}
// The same north (d > 0) or south along the even (latitude) bits.
void MoveY(Bits* h, int d) {
  const uint64_t x = h->bits & 0xaaaaaaaaaaaaaaaaULL;
  uint64_t y = h->bits & 0x5555555555555555ULL;
  const uint64_t zz = 0xaaaaaaaaaaaaaaaaULL >> (64 - h->step * 2);
  if (d > 0) {
    y = y + (zz + 1);
  } else {
    y = y | zz;
    y = y - (zz + 1);
  }
  y &= (0x5555555555555555ULL >> (64 - h->step * 2));
  h->bits = x | y;
}

Bits Moved(Bits h, int dx, int dy) {
  if (dx != 0) MoveX(&h, dx);
  if (dy != 0) MoveY(&h, dy);
  return h;
}

// Redis 7.0's rectangle test: both axis distances through the full haversine formula (7.2 added
// cheaper shortcuts that can differ in the last bits).
bool DistanceIfInRectangle(double width_m, double height_m, double x1, double y1, double x2,
                           double y2, double* distance) {
  const double lon_distance = Distance(x2, y2, x1, y2);
  const double lat_distance = Distance(x2, y2, x2, y1);
  if (lon_distance > width_m / 2 || lat_distance > height_m / 2) return false;
  *distance = Distance(x1, y1, x2, y2);
  return true;
}

}  // namespace

bool Encode(Range lon_range, Range lat_range, double lon, double lat, int step, Bits* out) {
  if (step > 32 || step == 0 || (lat_range.min == 0 && lat_range.max == 0) ||
      (lon_range.min == 0 && lon_range.max == 0)) {
    return false;
  }
  if (lon > kLonMax || lon < kLonMin || lat > kLatMax || lat < kLatMin) return false;
  out->bits = 0;
  out->step = static_cast<uint8_t>(step);
  if (lat < lat_range.min || lat > lat_range.max || lon < lon_range.min || lon > lon_range.max) {
    return false;
  }
  double lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min);
  double lon_offset = (lon - lon_range.min) / (lon_range.max - lon_range.min);
  // Fixed point at the step's precision (truncated, as Redis' conversion to uint32_t).
  lat_offset *= static_cast<double>(1ULL << step);
  lon_offset *= static_cast<double>(1ULL << step);
  out->bits = Spread(static_cast<uint32_t>(lat_offset)) |
              (Spread(static_cast<uint32_t>(lon_offset)) << 1);
  return true;
}

bool EncodeWGS84(double lon, double lat, int step, Bits* out) {
  return Encode(kLonRange, kLatRange, lon, lat, step, out);
}

bool Decode(Range lon_range, Range lat_range, Bits hash, Area* out) {
  if (hash.IsZero() || (lat_range.min == 0 && lat_range.max == 0) ||
      (lon_range.min == 0 && lon_range.max == 0)) {
    return false;
  }
  out->hash = hash;
  const double lat_scale = lat_range.max - lat_range.min;
  const double lon_scale = lon_range.max - lon_range.min;
  const uint32_t ilat = Gather(hash.bits);
  const uint32_t ilon = Gather(hash.bits >> 1);
  const double cells = static_cast<double>(1ULL << hash.step);
  // ilat + 1 wraps in 32 bits as in Redis (only reachable from scores that are not geohashes).
  const uint32_t ilat1 = ilat + 1, ilon1 = ilon + 1;
  out->lat.min = lat_range.min + (ilat * 1.0 / cells) * lat_scale;
  out->lat.max = lat_range.min + (ilat1 * 1.0 / cells) * lat_scale;
  out->lon.min = lon_range.min + (ilon * 1.0 / cells) * lon_scale;
  out->lon.max = lon_range.min + (ilon1 * 1.0 / cells) * lon_scale;
  return true;
}

bool DecodeToLonLat(Bits hash, double xy[2]) {
  Area area;
  if (!Decode(kLonRange, kLatRange, hash, &area)) return false;
  xy[0] = (area.lon.min + area.lon.max) / 2;
  if (xy[0] > kLonMax) xy[0] = kLonMax;
  if (xy[0] < kLonMin) xy[0] = kLonMin;
  xy[1] = (area.lat.min + area.lat.max) / 2;
  if (xy[1] > kLatMax) xy[1] = kLatMax;
  if (xy[1] < kLatMin) xy[1] = kLatMin;
  return true;
}

uint64_t Align52(Bits hash) { return hash.bits << (52 - hash.step * 2); }

Neighbors GetNeighbors(Bits h) {
  Neighbors n;
  n.east = Moved(h, 1, 0);
  n.west = Moved(h, -1, 0);
  n.south = Moved(h, 0, -1);
  n.north = Moved(h, 0, 1);
  n.south_west = Moved(h, -1, -1);
  n.south_east = Moved(h, 1, -1);
  n.north_west = Moved(h, -1, 1);
  n.north_east = Moved(h, 1, 1);
  return n;
}

bool ScoreToLonLat(double score, double xy[2]) {
  // gcc's double -> uint64_t on x86-64: cvttsd2si below 2^63 (0x8000000000000000 when out of
  // int64 range), else the same on score - 2^63 with the top bit flipped.
  constexpr double k2p63 = 9223372036854775808.0;
  uint64_t bits;
  if (!(score >= k2p63)) {
    bits = score >= -k2p63 ? static_cast<uint64_t>(static_cast<int64_t>(score))
                           : 0x8000000000000000ULL;
  } else {
    const double rest = score - k2p63;
    bits = (rest < k2p63 ? static_cast<uint64_t>(static_cast<int64_t>(rest))
                         : 0x8000000000000000ULL) ^
           0x8000000000000000ULL;
  }
  return DecodeToLonLat(Bits{bits, kStepMax}, xy);
}

uint64_t LonLatToScore(double lon, double lat) {
  Bits h;
  EncodeWGS84(lon, lat, kStepMax, &h);
  return Align52(h);
}

std::string HashString(double lon, double lat) {
  static constexpr char kAlphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
  Bits h;
  Encode(Range{-180, 180}, Range{-90, 90}, lon, lat, kStepMax, &h);
  std::string out(11, '0');
  // 52 bits give 10 characters; the 11th (2 missing bits) is '0' as in Redis.
  for (int i = 0; i < 10; ++i) out[i] = kAlphabet[(h.bits >> (52 - (i + 1) * 5)) & 0x1f];
  return out;
}

int EstimateStepsByRadius(double range_m, double lat) {
  if (range_m == 0) return 26;
  int step = 1;
  while (range_m < kMercatorMax) {
    range_m *= 2;
    step++;
  }
  step -= 2;  // so that the range is inside the 9 cells in most cases
  // Cells are narrower towards the poles.
  if (lat > 66 || lat < -66) {
    step--;
    if (lat > 80 || lat < -80) step--;
  }
  if (step < 1) step = 1;
  if (step > 26) step = 26;
  return step;
}

double Distance(double lon1, double lat1, double lon2, double lat2) {
  const double lat1r = DegRad(lat1), lon1r = DegRad(lon1);
  const double lat2r = DegRad(lat2), lon2r = DegRad(lon2);
  const double u = std::sin((lat2r - lat1r) / 2);
  const double v = std::sin((lon2r - lon1r) / 2);
  return 2.0 * kEarthRadiusM *
         std::asin(std::sqrt(u * u + std::cos(lat1r) * std::cos(lat2r) * v * v));
}

void BoundingBox(const Shape& shape, double bounds[4]) {
  const double lon = shape.xy[0], lat = shape.xy[1];
  const bool circle = shape.type == Shape::kCircle;
  const double height = shape.conversion * (circle ? shape.radius : shape.height / 2);
  const double width = shape.conversion * (circle ? shape.radius : shape.width / 2);
  const double lat_delta = RadDeg(height / kEarthRadiusM);
  const double lon_delta_top = RadDeg(width / kEarthRadiusM / std::cos(DegRad(lat + lat_delta)));
  const double lon_delta_bottom =
      RadDeg(width / kEarthRadiusM / std::cos(DegRad(lat - lat_delta)));
  // The edge nearer the equator is the wider one.
  const bool southern = lat < 0;
  bounds[0] = southern ? lon - lon_delta_bottom : lon - lon_delta_top;
  bounds[2] = southern ? lon + lon_delta_bottom : lon + lon_delta_top;
  bounds[1] = lat - lat_delta;
  bounds[3] = lat + lat_delta;
}

SearchArea AreasByShape(Shape* shape) {
  BoundingBox(*shape, shape->bounds);
  const double min_lon = shape->bounds[0], min_lat = shape->bounds[1];
  const double max_lon = shape->bounds[2], max_lat = shape->bounds[3];
  const double lon = shape->xy[0], lat = shape->xy[1];
  // A box is covered through the circle around its corners.
  double radius_m = shape->type == Shape::kCircle
                        ? shape->radius
                        : std::sqrt((shape->width / 2) * (shape->width / 2) +
                                    (shape->height / 2) * (shape->height / 2));
  radius_m *= shape->conversion;

  int steps = EstimateStepsByRadius(radius_m, lat);
  SearchArea r;
  EncodeWGS84(lon, lat, steps, &r.hash);
  r.neighbors = GetNeighbors(r.hash);
  Decode(kLonRange, kLatRange, r.hash, &r.area);

  // Near a cell edge the estimated step may leave part of the shape outside the 9 cells: one step
  // coarser then.
  Area north, south, east, west;
  Decode(kLonRange, kLatRange, r.neighbors.north, &north);
  Decode(kLonRange, kLatRange, r.neighbors.south, &south);
  Decode(kLonRange, kLatRange, r.neighbors.east, &east);
  Decode(kLonRange, kLatRange, r.neighbors.west, &west);
  const bool decrease = north.lat.max < max_lat || south.lat.min > min_lat ||
                        east.lon.max < max_lon || west.lon.min > min_lon;
  if (steps > 1 && decrease) {
    steps--;
    EncodeWGS84(lon, lat, steps, &r.hash);
    r.neighbors = GetNeighbors(r.hash);
    Decode(kLonRange, kLatRange, r.hash, &r.area);
  }

  // Drop the neighbours the shape cannot reach.
  if (steps >= 2) {
    Neighbors& n = r.neighbors;
    if (r.area.lat.min < min_lat) n.south = n.south_west = n.south_east = Bits{};
    if (r.area.lat.max > max_lat) n.north = n.north_east = n.north_west = Bits{};
    if (r.area.lon.min < min_lon) n.west = n.south_west = n.north_west = Bits{};
    if (r.area.lon.max > max_lon) n.east = n.south_east = n.north_east = Bits{};
  }
  return r;
}

bool WithinShape(const Shape& shape, double score, double xy[2], double* dist_m) {
  if (!ScoreToLonLat(score, xy)) return false;
  if (shape.type == Shape::kCircle) {
    *dist_m = Distance(shape.xy[0], shape.xy[1], xy[0], xy[1]);
    return *dist_m <= shape.radius * shape.conversion;
  }
  return DistanceIfInRectangle(shape.width * shape.conversion, shape.height * shape.conversion,
                               shape.xy[0], shape.xy[1], xy[0], xy[1], dist_m);
}

}  // namespace shardis::core::geohash
