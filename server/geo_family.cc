// Geo commands (Redis 7.0 semantics, replies and error texts; geo.c is the reference), on sorted
// sets whose scores are Redis' 52-bit geohashes (core/geohash.h).
//
// GEOADD is ZADD with the coordinates turned into scores (as in Redis). GEOSEARCH and the _RO
// radius commands run on the key's shard. GEORADIUS/GEORADIUSBYMEMBER (which may STORE) and
// GEOSEARCHSTORE run as a shard::Transaction: the search on the source's shard, then a RunOn on the
// destination's shard stores the result.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/geohash.h"
#include "core/number.h"
#include "core/string_util.h"
#include "core/value_object.h"
#include "core/zset.h"
#include "server/arg_parser.h"
#include "server/command.h"
#include "server/command_keys.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "server/zset_family.h"
#include "shard/transaction.h"

namespace shardis::server {

using core::ZSet;
using core::geohash::Shape;
using shard::Db;

namespace {

constexpr std::string_view kDecodeMemberErr = "ERR could not decode requested zset member";

// Redis' addReplyDoubleDistance: 4 decimals, a bulk string in RESP2 and RESP3.
void ReplyDistance(core::ReplyBuilder& rb, double d) {
  char buf[128];
  const int len = std::snprintf(buf, sizeof(buf), "%.4f", d);
  rb.Bulk(std::string_view(buf, size_t(len)));
}

// Redis' extractLongLatOrReply: two floats inside the WGS-84 box.
bool ReadLonLat(ArgParser& p, double xy[2]) {
  const std::string_view lon = p.Next();
  const std::string_view lat = p.Next();
  if (!p.ok()) return false;
  if (!core::ParseDouble(lon, &xy[0]) || !core::ParseDouble(lat, &xy[1])) {
    p.Fail(kNotFloatErr);
    return false;
  }
  namespace gh = core::geohash;
  if (xy[0] < gh::kLonMin || xy[0] > gh::kLonMax || xy[1] < gh::kLatMin || xy[1] > gh::kLatMax) {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "ERR invalid longitude,latitude pair %f,%f", xy[0], xy[1]);
    p.Fail(buf);
    return false;
  }
  return true;
}

// Redis' extractUnitOrReply: meters per unit, or < 0 after recording the error.
double ReadUnit(ArgParser& p) {
  if (p.Check("m")) return 1;
  if (p.Check("km")) return 1000;
  if (p.Check("ft")) return 0.3048;
  if (p.Check("mi")) return 1609.34;
  p.Fail("ERR unsupported unit provided. please use M, KM, FT, MI");
  return -1;
}

// A float operand of a shape, `error` when it is not one (Redis' "need numeric ...").
double ReadShapeSize(ArgParser& p, std::string_view error) {
  const std::string_view arg = p.Next();
  double v = 0;
  if (p.ok() && !core::ParseDouble(arg, &v)) p.Fail(error);
  return v;
}

// Redis' extractDistanceOrReply: "<radius> <unit>".
bool ReadRadius(ArgParser& p, Shape* shape) {
  shape->radius = ReadShapeSize(p, "ERR need numeric radius");
  if (p.ok() && shape->radius < 0) p.Fail("ERR radius cannot be negative");
  if (!p.ok()) return false;
  shape->conversion = ReadUnit(p);
  return p.ok();
}

// Redis' extractBoxOrReply: "<width> <height> <unit>".
bool ReadBox(ArgParser& p, Shape* shape) {
  shape->width = ReadShapeSize(p, "ERR need numeric width");
  shape->height = ReadShapeSize(p, "ERR need numeric height");
  if (p.ok() && (shape->height < 0 || shape->width < 0)) {
    p.Fail("ERR height or width cannot be negative");
  }
  if (!p.ok()) return false;
  shape->conversion = ReadUnit(p);
  return p.ok();
}

// The position of a member of the set; false when it is missing.
bool MemberLonLat(const ZSet& z, std::string_view member, double xy[2]) {
  double score;
  return z.Score(member, &score) && core::geohash::ScoreToLonLat(score, xy);
}

// The kind of search command (Redis' RADIUS_COORDS, RADIUS_MEMBER, RADIUS_NOSTORE, GEOSEARCH,
// GEOSEARCHSTORE flags).
enum SearchFlag : unsigned {
  kRadiusCoords = 1 << 0,
  kRadiusMember = 1 << 1,
  kNoStore = 1 << 2,
  kGeoSearch = 1 << 3,
  kGeoSearchStore = 1 << 4,
};

enum class Sort : uint8_t { kNone, kAsc, kDesc };

struct Query {
  Shape shape;
  bool withdist = false, withhash = false, withcoord = false, any = false;
  Sort sort = Sort::kNone;
  int64_t count = 0;  // 0: unlimited
  bool store = false;  // STORE/STOREDIST or GEOSEARCHSTORE (the key may be "")
  std::string_view storekey;
  bool storedist = false;
  bool missing = false;  // the source does not exist: empty reply / the destination is deleted
};

// Redis' georadiusGeneric up to the search, after the source's type check: the centre, the shape
// and the options, with Redis' order of errors. z is the source (null when missing). False after
// setting *err.
bool ParseQuery(ArgSlice args, unsigned flags, const ZSet* z, Query* q, std::string* err) {
  // GEOSEARCHSTORE's destination comes before the source.
  ArgParser p(args, (flags & kGeoSearchStore) ? 3 : 2);
  Shape& shape = q->shape;
  if (flags & kRadiusCoords) {
    shape.type = Shape::kCircle;
    if (ReadLonLat(p, shape.xy)) ReadRadius(p, &shape);
  } else if (flags & kRadiusMember) {
    const std::string_view member = p.Next();
    if (z == nullptr) {
      p.Next();  // the radius and unit are read only from a source that exists, as in Redis
      p.Next();
    } else {
      shape.type = Shape::kCircle;
      if (!MemberLonLat(*z, member, shape.xy)) p.Fail(kDecodeMemberErr);
      ReadRadius(p, &shape);
    }
  } else if (flags & kGeoSearchStore) {
    q->store = true;
    q->storekey = args[1];
  }

  const bool search = flags & kGeoSearch;
  const bool can_store = !(flags & kNoStore) && !search;
  bool frommember = false, fromloc = false, byradius = false, bybox = false;
  while (p.HasNext()) {
    if (p.Check("withdist")) {
      q->withdist = true;
    } else if (p.Check("withhash")) {
      q->withhash = true;
    } else if (p.Check("withcoord")) {
      q->withcoord = true;
    } else if (p.Check("any")) {
      q->any = true;
    } else if (p.Check("asc")) {
      q->sort = Sort::kAsc;
    } else if (p.Check("desc")) {
      q->sort = Sort::kDesc;
    } else if (p.Check("count", 1)) {
      q->count = p.Next<int64_t>();
      if (p.ok() && q->count <= 0) p.Fail("ERR COUNT must be > 0");
    } else if (can_store && p.Check("store", 1)) {
      q->store = true;
      q->storedist = false;
      q->storekey = p.Next();
    } else if (can_store && p.Check("storedist", 1)) {
      q->store = true;
      q->storedist = true;
      q->storekey = p.Next();
    } else if ((flags & kGeoSearchStore) && p.Check("storedist")) {
      q->storedist = true;
    } else if (search && !fromloc && p.Check("frommember", 1)) {
      const std::string_view member = p.Next();
      if (z != nullptr && !MemberLonLat(*z, member, shape.xy)) p.Fail(kDecodeMemberErr);
      frommember = true;
    } else if (search && !frommember && p.Check("fromlonlat", 2)) {
      fromloc = ReadLonLat(p, shape.xy);
    } else if (search && !bybox && p.Check("byradius", 2)) {
      shape.type = Shape::kCircle;
      byradius = ReadRadius(p, &shape);
    } else if (search && !byradius && p.Check("bybox", 3)) {
      shape.type = Shape::kBox;
      bybox = ReadBox(p, &shape);
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (!p.ok()) {
    *err = p.error();
    return false;
  }

  if (q->store) {
    if (q->withdist || q->withhash || q->withcoord) {
      *err = (flags & kGeoSearchStore)
                 ? "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD "
                   "options"
                 : "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and "
                   "WITHCOORD options";
      return false;
    }
  }
  if ((flags & kGeoSearch) && !(frommember || fromloc)) {
    *err = "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " +
           std::string(args[0]);
    return false;
  }
  if ((flags & kGeoSearch) && !(byradius || bybox)) {
    *err = "ERR exactly one of BYRADIUS and BYBOX can be specified for " + std::string(args[0]);
    return false;
  }
  if (q->any && q->count == 0) {
    *err = "ERR the ANY argument requires COUNT argument";
    return false;
  }
  q->missing = z == nullptr;
  // COUNT keeps the nearest ones, so it sorts (except with ANY: the first ones found).
  if (q->count != 0 && q->sort == Sort::kNone && !q->any) q->sort = Sort::kAsc;
  return true;
}

struct GeoPoint {
  std::string member;
  double dist;  // in the query's unit once Finish ran
  double score;
  double lon, lat;
};

// Redis' membersOfAllNeighbors: scans the centre cell and its neighbours in Redis' order, skipping
// zeroed ones and a neighbour equal to the previous scanned one; with ANY stops at `count`.
void Search(const ZSet& z, Query* q, std::vector<GeoPoint>* out) {
  namespace gh = core::geohash;
  const gh::SearchArea area = gh::AreasByShape(&q->shape);
  const gh::Neighbors& n = area.neighbors;
  const std::array<gh::Bits, 9> cells = {area.hash,     n.north,      n.south,
                                         n.east,        n.west,       n.north_east,
                                         n.north_west,  n.south_east, n.south_west};
  const size_t limit = q->any ? size_t(q->count) : 0;
  size_t last = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].IsZero()) continue;
    // Huge radii make adjacent neighbours identical: scan a cell once.
    if (last != 0 && cells[i].bits == cells[last].bits && cells[i].step == cells[last].step) {
      continue;
    }
    if (limit != 0 && out->size() >= limit) break;
    gh::Bits next = cells[i];
    next.bits++;
    core::ZScoreRange range;
    range.min = double(gh::Align52(cells[i]));
    range.max = double(gh::Align52(next));
    range.maxex = true;
    z.RangeByScore(range, false, 0, -1, [&](std::string_view member, double score) {
      if (limit != 0 && out->size() >= limit) return;
      double xy[2], dist;
      if (!gh::WithinShape(q->shape, score, xy, &dist)) return;
      out->push_back(GeoPoint{std::string(member), dist, score, xy[0], xy[1]});
    });
    last = i;
  }
}

// Sorts as asked, keeps COUNT points and converts the distances to the query's unit.
void Finish(const Query& q, std::vector<GeoPoint>* points) {
  const size_t keep = q.count == 0 || points->size() < size_t(q.count) ? points->size()
                                                                        : size_t(q.count);
  if (q.sort != Sort::kNone) {
    auto less = [asc = q.sort == Sort::kAsc](const GeoPoint& a, const GeoPoint& b) {
      return asc ? a.dist < b.dist : a.dist > b.dist;
    };
    std::stable_sort(points->begin(), points->end(), less);
  }
  points->resize(keep);
  for (GeoPoint& p : *points) p.dist /= q.shape.conversion;
}

void ReplyPoints(const Query& q, const std::vector<GeoPoint>& points, core::ReplyBuilder& rb) {
  const size_t options = size_t(q.withdist) + q.withhash + q.withcoord;
  rb.ArrayHeader(points.size());
  for (const GeoPoint& p : points) {
    if (options) rb.ArrayHeader(options + 1);
    rb.Bulk(p.member);
    if (q.withdist) ReplyDistance(rb, p.dist);
    if (q.withhash) rb.Integer(int64_t(p.score));
    if (q.withcoord) {
      rb.ArrayHeader(2);
      rb.HumanLongDouble(p.lon);
      rb.HumanLongDouble(p.lat);
    }
  }
}

// Type check, parse and search on the source's shard. False after setting *err.
bool RunQuery(ArgSlice args, unsigned flags, const ZSet* z, Query* q, std::vector<GeoPoint>* out,
              std::string* err) {
  if (!ParseQuery(args, flags, z, q, err)) return false;
  if (z != nullptr) Search(*z, q, out);
  Finish(*q, out);
  return true;
}

// GEOSEARCH, GEORADIUS_RO, GEORADIUSBYMEMBER_RO: reads on the key's shard.
template <unsigned kFlags>
void CmdGeoSearchRead(ArgSlice args, ShardContext& ctx) {
  const size_t src = 1;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[src], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  Query q;
  std::vector<GeoPoint> points;
  std::string err;
  if (!RunQuery(args, kFlags, Db::Found(it) ? AsZSet(it) : nullptr, &q, &points, &err)) {
    return ctx.rb.Error(err);
  }
  ReplyPoints(q, points, ctx.rb);
}

// GEORADIUS, GEORADIUSBYMEMBER (STORE/STOREDIST) and GEOSEARCHSTORE: the search on the source's
// shard, then the store on the destination's.
template <unsigned kFlags>
void CmdGeoSearchStore(ArgSlice args, ConnContext& ctx) {
  const size_t src_arg = (kFlags & kGeoSearchStore) ? 2 : 1;
  // The destination, from a parse without the source (it finds STORE wherever the real parse,
  // on the source's shard, would; errors are reported by the real parse).
  Query pre;
  {
    std::string ignored;
    ParseQuery(args, kFlags, nullptr, &pre, &ignored);
  }
  std::vector<std::string_view> keys = {args[src_arg]};
  if (pre.store) keys.push_back(pre.storekey);
  shard::Transaction tx(ctx.conn.db, keys,
                        pre.store ? shard::Transaction::kWrite : shard::Transaction::kRead);
  bool wrong_type = false, ok = false;
  Query q;
  std::vector<GeoPoint> points;
  std::string err;
  tx.Run([&](shard::TxShard& t) {
    for (uint32_t i : t.keys) {
      if (i != 0) continue;
      Db::Iterator it = LookupRead(t.shard, t.db, tx.key(0), tx.hash(0), t.now_ms);
      if (Db::Found(it) && it.value().type() != core::ValueType::kZSet) {
        wrong_type = true;
        return;
      }
      ok = RunQuery(args, kFlags, Db::Found(it) ? AsZSet(it) : nullptr, &q, &points, &err);
    }
  });
  if (wrong_type || !ok || !q.store || !pre.store) {
    tx.Conclude();
    if (wrong_type) return ctx.rb.Error(kWrongTypeErr);
    if (!ok) return ctx.rb.Error(err);
    return ReplyPoints(q, points, ctx.rb);
  }
  std::vector<std::pair<std::string, double>> items;
  items.reserve(points.size());
  for (GeoPoint& p : points) {
    items.emplace_back(std::move(p.member), q.storedist ? p.dist : p.score);
  }
  tx.RunOn(tx.shard_of(1), [&](shard::TxShard& t) {
    StoreZSet(t.shard, t.db, tx.key(1), tx.hash(1), t.now_ms, items, /*count_each_member=*/true,
              core::EqualsIgnoreCase(args[0], "geosearchstore") ? "geosearchstore"
                                                                 : "georadiusstore");
  });
  tx.Conclude();
  ctx.rb.Integer(int64_t(items.size()));
}

// GEOADD key [NX|XX] [CH] lon lat member ...: ZADD with the geohashes as scores.
void CmdGeoAdd(ArgSlice args, ShardContext& ctx) {
  ArgParser p(args, 2);
  bool nx = false, xx = false;
  while (true) {
    if (p.Check("nx")) {
      nx = true;
    } else if (p.Check("xx")) {
      xx = true;
    } else if (!p.Check("ch")) {
      break;  // CH is ZADD's: it stays in the arguments passed on
    }
  }
  const size_t longidx = p.pos();
  if (p.Remaining() % 3 != 0 || (xx && nx)) return ctx.rb.Error(kSyntaxErr);
  std::vector<std::string> scores;
  std::vector<std::string_view> zargs(args.begin(), args.begin() + longidx);
  zargs[0] = "zadd";
  while (p.HasNext()) {
    double xy[2];
    if (!ReadLonLat(p, xy)) break;
    scores.push_back(core::Int64ToString(int64_t(core::geohash::LonLatToScore(xy[0], xy[1]))));
    p.Next();  // the member, passed on below
  }
  if (p.ReplyError(ctx.rb)) return;
  for (size_t i = 0; i < scores.size(); ++i) {
    zargs.push_back(scores[i]);
    zargs.push_back(args[longidx + 3 * i + 2]);
  }
  ZAddGeneric(ArgSlice(zargs), ctx, 0);
}

// GEOPOS and GEOHASH: one reply per member, from its position; `missing` for a member (or key)
// that is not there.
template <typename Found>
void ReplyPerMember(ArgSlice args, ShardContext& ctx, void (core::ReplyBuilder::*missing)(),
                    Found found) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  const ZSet* z = Db::Found(it) ? AsZSet(it) : nullptr;
  ctx.rb.ArrayHeader(args.size() - 2);
  for (size_t j = 2; j < args.size(); ++j) {
    double xy[2];
    if (z == nullptr || !MemberLonLat(*z, args[j], xy)) {
      (ctx.rb.*missing)();
    } else {
      found(xy);
    }
  }
}

// GEOPOS key member ...
void CmdGeoPos(ArgSlice args, ShardContext& ctx) {
  ReplyPerMember(args, ctx, &core::ReplyBuilder::NullArray, [&](const double* xy) {
    ctx.rb.ArrayHeader(2);
    ctx.rb.HumanLongDouble(xy[0]);
    ctx.rb.HumanLongDouble(xy[1]);
  });
}

// GEOHASH key member ...
void CmdGeoHash(ArgSlice args, ShardContext& ctx) {
  ReplyPerMember(args, ctx, &core::ReplyBuilder::Null, [&](const double* xy) {
    ctx.rb.Bulk(core::geohash::HashString(xy[0], xy[1]));
  });
}

// GEODIST key member1 member2 [unit]
void CmdGeoDist(ArgSlice args, ShardContext& ctx) {
  double to_meter = 1;
  if (args.size() == 5) {
    ArgParser p(args, 4);
    to_meter = ReadUnit(p);
    if (p.ReplyError(ctx.rb)) return;
  } else if (args.size() > 5) {
    return ctx.rb.Error(kSyntaxErr);
  }
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Null();
  double a[2], b[2];
  if (!MemberLonLat(*AsZSet(it), args[2], a) || !MemberLonLat(*AsZSet(it), args[3], b)) {
    return ctx.rb.Null();
  }
  ReplyDistance(ctx.rb, core::geohash::Distance(a[0], a[1], b[0], b[1]) / to_meter);
}

}  // namespace

void RegisterGeoFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kD = kDenyOom;
  r->Register({.name = "geoadd", .arity = -5, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write geo slow", .on_shard = CmdGeoAdd,
               .docs = {.group = "geo", .since = "3.2.0",
                        .complexity = "O(log(N)) for each item added, where N is the number of "
                                      "elements in the sorted set.",
                        .summary = "Adds places (longitude, latitude, name) to a geospatial index "
                                   "kept in a sorted set.", .key_flags = "RW update"}});
  r->Register({.name = "geopos", .arity = -2, .flags = kR, .keys = kOneKey,
               .acl_categories = "read geo slow", .on_shard = CmdGeoPos,
               .docs = {.group = "geo", .since = "3.2.0",
                        .complexity = "O(N) where N is the number of members requested.",
                        .summary = "Returns the longitude and latitude of places of a geospatial "
                                   "index.", .key_flags = "RO access"}});
  r->Register({.name = "geohash", .arity = -2, .flags = kR, .keys = kOneKey,
               .acl_categories = "read geo slow", .on_shard = CmdGeoHash,
               .docs = {.group = "geo", .since = "3.2.0",
                        .complexity = "O(log(N)) for each member requested, where N is the number "
                                      "of elements in the sorted set.",
                        .summary = "Returns the geohash strings of places of a geospatial index.",
                        .key_flags = "RO access"}});
  r->Register({.name = "geodist", .arity = -4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read geo slow", .on_shard = CmdGeoDist,
               .docs = {.group = "geo", .since = "3.2.0", .complexity = "O(log(N))",
                        .summary = "Returns the distance between two places of a geospatial index.",
                        .key_flags = "RO access"}});
  r->Register({.name = "geosearch", .arity = -7, .flags = kR, .keys = kOneKey,
               .acl_categories = "read geo slow", .on_shard = CmdGeoSearchRead<kGeoSearch>,
               .docs = {.group = "geo", .since = "6.2.0",
                        .complexity = "O(N+log(M)) where N is the number of elements in the "
                                      "grid-aligned bounding box area around the shape provided as "
                                      "the filter and M is the number of items inside the shape",
                        .summary = "Finds the places of a geospatial index inside a circle or a "
                                   "box around a point or a member.", .key_flags = "RO access"}});
  r->Register({.name = "georadius_ro", .arity = -6, .flags = kR, .keys = kOneKey,
               .acl_categories = "read geo slow",
               .on_shard = CmdGeoSearchRead<kRadiusCoords | kNoStore>,
               .docs = {.group = "geo", .since = "3.2.10",
                        .complexity = "O(N+log(M)) where N is the number of elements inside the "
                                      "bounding box of the circular area delimited by center and "
                                      "radius and M is the number of items inside the index.",
                        .summary = "Finds the places within a radius of a point (GEORADIUS without "
                                   "STORE).", .key_flags = "RO access"}});
  r->Register({.name = "georadiusbymember_ro", .arity = -5, .flags = kR, .keys = kOneKey,
               .acl_categories = "read geo slow",
               .on_shard = CmdGeoSearchRead<kRadiusMember | kNoStore>,
               .docs = {.group = "geo", .since = "3.2.10",
                        .complexity = "O(N+log(M)) where N is the number of elements inside the "
                                      "bounding box of the circular area delimited by center and "
                                      "radius and M is the number of items inside the index.",
                        .summary = "Finds the places within a radius of a member "
                                   "(GEORADIUSBYMEMBER without STORE).",
                        .key_flags = "RO access"}});
  r->Register({.name = "georadius", .arity = -6, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write geo slow", .on_conn = CmdGeoSearchStore<kRadiusCoords>,
               .key_finder = GeoRadiusKeys,
               .docs = {.group = "geo", .since = "3.2.0",
                        .complexity = "O(N+log(M)) where N is the number of elements inside the "
                                      "bounding box of the circular area delimited by center and "
                                      "radius and M is the number of items inside the index.",
                        .summary = "Finds the places within a radius of a point, optionally "
                                   "storing them in a key (old form of GEOSEARCH).",
                        .key_flags = "RO access",
                        .other_key_flags = "OW update"}});
  r->Register({.name = "georadiusbymember", .arity = -5, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write geo slow", .on_conn = CmdGeoSearchStore<kRadiusMember>,
               .key_finder = GeoRadiusKeys,
               .docs = {.group = "geo", .since = "3.2.0",
                        .complexity = "O(N+log(M)) where N is the number of elements inside the "
                                      "bounding box of the circular area delimited by center and "
                                      "radius and M is the number of items inside the index.",
                        .summary = "Finds the places within a radius of a member, optionally "
                                   "storing them in a key (old form of GEOSEARCH).",
                        .key_flags = "RO access",
                        .other_key_flags = "OW update"}});
  r->Register({.name = "geosearchstore", .arity = -8, .flags = kW | kD, .keys = kTwoKeys,
               .acl_categories = "write geo slow",
               .on_conn = CmdGeoSearchStore<kGeoSearch | kGeoSearchStore>,
               .docs = {.group = "geo", .since = "6.2.0",
                        .complexity = "O(N+log(M)) where N is the number of elements in the "
                                      "grid-aligned bounding box area around the shape provided as "
                                      "the filter and M is the number of items inside the shape",
                        .summary = "Finds the places inside a circle or a box, as GEOSEARCH, and "
                                   "stores them in a key.", .key_flags = "OW update",
                        .other_key_flags = "RO access"}});
}

}  // namespace shardis::server
