// LOLWUT [VERSION version] [art arguments...]: computer art and the Redis version (Redis'
// lolwut.c). Like Redis, the art depends on the version: 5 and 6 draw a picture, every other
// version (our own, by default) only says "Redis ver. x.y.z". Our picture is our own: a text
// grid of squares that fall into disorder row after row, after Georg Nees' "Schotter" (1968),
// which Redis' LOLWUT 5 draws in Braille dots.

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "core/number.h"
#include "core/string_util.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/server_state.h"

namespace shardis::server {
namespace {

// The art's arguments: columns of text, squares per row, rows of squares; defaults and bounds
// as LOLWUT 5's (which keep the command fast and its reply small).
struct ArtSize {
  int64_t cols = 66;
  int64_t squares_per_row = 8;
  int64_t rows = 12;
};

// Each square is two characters wide and one line tall; a square moves right by up to a
// distance that grows with its row, so the top rows are orderly and the bottom ones scattered.
// The seed is fixed: the same arguments draw the same picture.
std::string DrawSquares(const ArtSize& size) {
  std::mt19937 rng(1968);
  const int64_t cell = std::max<int64_t>(2, size.cols / size.squares_per_row);
  std::string art;
  for (int64_t r = 0; r < size.rows; ++r) {
    std::string line(size.cols, ' ');
    const int64_t max_shift = (cell - 2) * r / std::max<int64_t>(1, size.rows - 1);
    for (int64_t s = 0; s < size.squares_per_row; ++s) {
      const int64_t shift = max_shift > 0 ? int64_t(rng() % uint64_t(max_shift + 1)) : 0;
      const int64_t at = s * cell + shift;
      if (at + 1 >= size.cols) break;
      line[at] = '[';
      line[at + 1] = ']';
    }
    line.erase(line.find_last_not_of(' ') + 1);
    art.append(line).push_back('\n');
  }
  return art;
}

void CmdLolwut(ArgSlice args, ConnContext& ctx) {
  ArgSlice art_args = args.subspan(1);
  int64_t version = 0;  // 0: ours, which has no picture
  if (args.size() >= 3 && core::EqualsIgnoreCase(args[1], "version")) {
    if (!core::ParseInt64(args[2], &version)) return ctx.rb.Error(kNotIntegerErr);
    art_args = args.subspan(3);
  }
  const std::string caption = core::Concat("Redis ver. ", kRedisVersion, "\n");
  if (version != 5 && version != 6) return ctx.rb.Verbatim(caption);
  ArtSize size;
  int64_t* fields[] = {&size.cols, &size.squares_per_row, &size.rows};
  for (size_t i = 0; i < art_args.size() && i < std::size(fields); ++i) {
    if (!core::ParseInt64(art_args[i], fields[i])) return ctx.rb.Error(kNotIntegerErr);
  }
  size.cols = std::clamp<int64_t>(size.cols, 1, 1000);
  size.squares_per_row = std::clamp<int64_t>(size.squares_per_row, 1, 200);
  size.rows = std::clamp<int64_t>(size.rows, 1, 200);
  ctx.rb.Verbatim(core::Concat(DrawSquares(size),
                               "\nAfter Georg Nees - schotter, plotter on paper, 1968. ", caption));
}

}  // namespace

void RegisterLolwutCommand(CommandRegistry* r) {
  r->Register({.name = "lolwut", .arity = -1, .flags = kReadOnly | kFast, .keys = kNoKeys,
               .acl_categories = "read fast", .on_conn = CmdLolwut,
               .docs = {.group = "server", .since = "5.0.0", .complexity = "",
                        .summary = "Shows computer art and the Redis version."}});
}

}  // namespace shardis::server
