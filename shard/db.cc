#include "shard/db.h"

namespace shardis::shard {

Entry* Db::Find(std::string_view key, int64_t now_ms) {
  auto it = table_.find(key);
  if (it == table_.end()) return nullptr;
  Entry& e = it->second;
  if (e.expire_at_ms != 0 && e.expire_at_ms <= now_ms) {
    RemoveDeadline(e.expire_at_ms, it->first);
    table_.erase(it);
    ++expired_keys_;
    return nullptr;
  }
  return &e;
}

Entry* Db::FindOrInsert(std::string_view key, int64_t now_ms, bool* inserted) {
  auto [it, fresh] = table_.try_emplace(key);
  Entry& e = it->second;
  if (!fresh && e.expire_at_ms != 0 && e.expire_at_ms <= now_ms) {
    RemoveDeadline(e.expire_at_ms, it->first);
    e = Entry{};
    fresh = true;
    ++expired_keys_;
  }
  *inserted = fresh;
  return &e;
}

bool Db::Erase(std::string_view key, int64_t now_ms) {
  auto it = table_.find(key);
  if (it == table_.end()) return false;
  const int64_t deadline = it->second.expire_at_ms;
  if (deadline != 0) RemoveDeadline(deadline, it->first);
  table_.erase(it);
  if (deadline != 0 && deadline <= now_ms) {
    ++expired_keys_;
    return false;
  }
  return true;
}

void Db::SetExpire(std::string_view key, Entry* entry, int64_t at_ms) {
  if (entry->expire_at_ms == at_ms) return;
  if (entry->expire_at_ms != 0) RemoveDeadline(entry->expire_at_ms, std::string(key));
  entry->expire_at_ms = at_ms;
  if (at_ms != 0) AddDeadline(at_ms, key);
}

void Db::AddDeadline(int64_t at_ms, std::string_view key) {
  deadlines_.emplace(at_ms, std::string(key));
  deadline_sum_ += at_ms;
}

void Db::RemoveDeadline(int64_t at_ms, const std::string& key) {
  deadlines_.erase({at_ms, key});
  deadline_sum_ -= at_ms;
}

size_t Db::ExpireSome(int64_t now_ms, size_t max_keys) {
  size_t removed = 0;
  while (removed < max_keys && !deadlines_.empty()) {
    auto first = deadlines_.begin();
    if (first->first > now_ms) break;
    table_.erase(first->second);
    deadline_sum_ -= first->first;
    deadlines_.erase(first);
    ++removed;
    ++expired_keys_;
  }
  return removed;
}

int64_t Db::SumTtlMs(int64_t now_ms) const {
  // Keys already past their deadline but not yet removed would count negative: clamp the total.
  __int128 sum = deadline_sum_ - __int128(now_ms) * __int128(deadlines_.size());
  if (sum <= 0) return 0;
  return sum > __int128(INT64_MAX) ? INT64_MAX : int64_t(sum);
}

void Db::Clear() {
  table_.clear();
  deadlines_.clear();
  deadline_sum_ = 0;
}

}  // namespace shardis::shard
