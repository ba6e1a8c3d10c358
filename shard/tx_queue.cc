#include "shard/tx_queue.h"

#include <glog/logging.h>

#include <algorithm>

namespace shardis::shard {

bool TxQueue::Schedule(TxPart* part) {
  DCHECK(!part->scheduled);
  if (part->txid <= max_ran_) return false;
  if (part->global) {
    ++global_count_;
  } else {
    for (const TxPart::LockKey& k : part->keys) {
      Counts& c = locks_[k.db][k.key];
      if (c.shared == 0 && c.exclusive == 0) ++locked_keys_;
      ++(part->exclusive ? c.exclusive : c.shared);
    }
    UpdateLockFree();
  }
  queue_.emplace(part->txid, part);
  part->scheduled = true;
  return true;
}

bool TxQueue::TryAddKey(TxPart* part, const TxPart::LockKey& key) {
  DCHECK(part->scheduled && !part->global);
  // Any intent on the key is another transaction's: the part never adds a key it holds.
  if (Conflicts(key.db, key.key, part->exclusive)) return false;
  Counts& c = locks_[key.db][key.key];
  if (c.shared == 0 && c.exclusive == 0) ++locked_keys_;
  ++(part->exclusive ? c.exclusive : c.shared);
  UpdateLockFree();
  part->keys.push_back(key);
  return true;
}

void TxQueue::Remove(TxPart* part) {
  DCHECK(part->scheduled);
  part->scheduled = false;
  part->pending = nullptr;
  queue_.erase(part->txid);
  if (part->global) {
    --global_count_;
  } else {
    for (const TxPart::LockKey& k : part->keys) {
      auto it = locks_[k.db].find(k.key);
      DCHECK(it != locks_[k.db].end());
      Counts& c = it->second;
      --(part->exclusive ? c.exclusive : c.shared);
      if (c.shared == 0 && c.exclusive == 0) {
        locks_[k.db].erase(it);
        --locked_keys_;
      }
    }
    UpdateLockFree();
  }
  RunReadyPending();
}

bool TxQueue::IsReady(const TxPart* part) const {
  DCHECK(part->scheduled);
  if (queue_.begin()->second == part) return true;
  // Out of order only when no other scheduled transaction wants any of our keys.
  if (part->global || part->in_order || global_count_ != 0) return false;
  for (const TxPart::LockKey& k : part->keys) {
    auto it = locks_[k.db].find(k.key);
    DCHECK(it != locks_[k.db].end());
    const Counts& c = it->second;
    if (part->exclusive ? (c.exclusive + c.shared != 1) : (c.exclusive != 0)) return false;
  }
  return true;
}

void TxQueue::RunWhenReady(TxPart* part, void (*run)(TxPart*)) {
  if (IsReady(part)) {
    run(part);
  } else {
    part->pending = run;
  }
}

void TxQueue::NoteRan(const TxPart* part) { max_ran_ = std::max(max_ran_, part->txid); }

bool TxQueue::Conflicts(int db, std::string_view key, bool write) const {
  if (global_count_ != 0) return true;
  if (lock_free_) return false;
  auto it = locks_[db].find(key);
  if (it == locks_[db].end()) return false;
  return write || it->second.exclusive != 0;
}

void TxQueue::RunReadyPending() {
  // A phase that runs may remove parts (its own, when it concludes), which runs this again: each
  // pass starts from the head and runs the first ready pending part.
  for (;;) {
    TxPart* ready = nullptr;
    for (const auto& [txid, part] : queue_) {
      if (part->pending != nullptr && IsReady(part)) {
        ready = part;
        break;
      }
    }
    if (ready == nullptr) return;
    void (*run)(TxPart*) = ready->pending;
    ready->pending = nullptr;
    run(ready);
  }
}

void TxQueue::UpdateLockFree() { lock_free_ = locked_keys_ == 0; }

}  // namespace shardis::shard
