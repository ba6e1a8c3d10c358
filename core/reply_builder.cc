#include "core/reply_builder.h"

#include <glog/logging.h>

#include "core/double_format.h"
#include "core/number.h"

namespace shardis::core {

namespace {

constexpr std::string_view kCrlf = "\r\n";

}  // namespace

void ReplyBuilder::Line(char prefix, int64_t n) {
  char buf[1 + kInt64BufSize + 2];
  buf[0] = prefix;
  size_t len = 1 + FormatInt64(n, buf + 1);
  buf[len++] = '\r';
  buf[len++] = '\n';
  out_->append(buf, len);
}

void ReplyBuilder::SimpleString(std::string_view s) {
  DCHECK(s.find_first_of(kCrlf) == std::string_view::npos) << "use Bulk for binary data";
  out_->push_back('+');
  out_->append(s);
  out_->append(kCrlf);
}

void ReplyBuilder::Ok() { out_->append("+OK\r\n"); }

void ReplyBuilder::Error(std::string_view msg) {
  if (error_observer_ != nullptr) error_observer_(msg);
  UncountedError(msg);
}

void ReplyBuilder::UncountedError(std::string_view msg) {
  out_->push_back('-');
  if (msg.find_first_of(kCrlf) == std::string_view::npos) {  // the usual case: no copy
    out_->append(msg);
  } else {
    const size_t first = msg.find_first_not_of(kCrlf);
    if (first != std::string_view::npos) {
      msg = msg.substr(first, msg.find_last_not_of(kCrlf) - first + 1);
      for (char c : msg) out_->push_back(c == '\r' || c == '\n' ? ' ' : c);
    }
  }
  out_->append(kCrlf);
}

void ReplyBuilder::Integer(int64_t v) { Line(':', v); }

void ReplyBuilder::Bulk(std::string_view s) {
  Line('$', static_cast<int64_t>(s.size()));
  out_->append(s);
  out_->append(kCrlf);
}

void ReplyBuilder::Null() { out_->append(resp3_ ? "_\r\n" : "$-1\r\n"); }

void ReplyBuilder::NullArray() { out_->append(resp3_ ? "_\r\n" : "*-1\r\n"); }

void ReplyBuilder::ArrayHeader(size_t n) { Line('*', static_cast<int64_t>(n)); }

void ReplyBuilder::MapHeader(size_t n) {
  if (resp3_) {
    Line('%', static_cast<int64_t>(n));
  } else {
    Line('*', static_cast<int64_t>(2 * n));
  }
}

void ReplyBuilder::SetHeader(size_t n) { Line(resp3_ ? '~' : '*', static_cast<int64_t>(n)); }

void ReplyBuilder::PushHeader(size_t n) { Line(resp3_ ? '>' : '*', static_cast<int64_t>(n)); }

void ReplyBuilder::AttributeHeader(size_t n) {
  DCHECK(resp3_) << "RESP2 has no attributes";
  Line('|', static_cast<int64_t>(n));
}

void ReplyBuilder::Double(double d) {
  char buf[kDoubleBufSize];
  const size_t len = FormatDouble(d, buf);
  if (resp3_) {
    out_->push_back(',');
    out_->append(buf, len);
    out_->append(kCrlf);
  } else {
    Bulk(std::string_view(buf, len));
  }
}

void ReplyBuilder::HumanLongDouble(long double d) {
  const std::string repr = FormatLongDouble(d);
  if (resp3_) {
    out_->push_back(',');
    out_->append(repr);
    out_->append(kCrlf);
  } else {
    Bulk(repr);
  }
}

void ReplyBuilder::Bool(bool b) {
  if (resp3_) {
    out_->append(b ? "#t\r\n" : "#f\r\n");
  } else {
    out_->append(b ? ":1\r\n" : ":0\r\n");
  }
}

void ReplyBuilder::BigNumber(std::string_view digits) {
  if (!resp3_) {
    Bulk(digits);
    return;
  }
  out_->push_back('(');
  out_->append(digits);
  out_->append(kCrlf);
}

void ReplyBuilder::Verbatim(std::string_view s, std::string_view type) {
  if (!resp3_) {
    Bulk(s);
    return;
  }
  DCHECK_EQ(type.size(), 3u) << "RESP3 verbatim types are 3 characters";
  Line('=', static_cast<int64_t>(s.size() + type.size() + 1));
  out_->append(type);
  out_->push_back(':');
  out_->append(s);
  out_->append(kCrlf);
}

void ReplyBuilder::BulkArray(const std::vector<std::string_view>& items) {
  ArrayHeader(items.size());
  for (std::string_view item : items) Bulk(item);
}

}  // namespace shardis::core
