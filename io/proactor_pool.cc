#include "io/proactor_pool.h"

#include <absl/strings/str_cat.h>
#include <glog/logging.h>
#include <pthread.h>
#include <sched.h>

#include <future>
#include <latch>

namespace shardis::io {

namespace {

std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

}  // namespace

ProactorPool::ProactorPool(unsigned num_threads, size_t ring_capacity)
    : mesh_(num_threads, ring_capacity) {
  for (unsigned i = 0; i < num_threads; ++i) {
    owned_.push_back(std::make_unique<Proactor>(i, &mesh_, &proactors_));
    proactors_.push_back(owned_.back().get());
  }
}

ProactorPool::~ProactorPool() { Stop(); }

absl::Status ProactorPool::Start() {
  std::vector<int> cpus = AllowedCpus();
  std::vector<std::promise<absl::Status>> ready(size());
  for (unsigned i = 0; i < size(); ++i) {
    threads_.emplace_back([this, i, &cpus, &ready] {
      Proactor* p = proactors_[i];
      if (!cpus.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpus[i % cpus.size()], &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
      }
      pthread_setname_np(pthread_self(), absl::StrCat("shard", i).c_str());
      absl::Status status = p->Init();
      bool ok = status.ok();
      ready[i].set_value(std::move(status));
      if (ok) p->Run([] {});
    });
  }
  absl::Status result;
  for (unsigned i = 0; i < size(); ++i) {
    absl::Status s = ready[i].get_future().get();
    if (!s.ok() && result.ok()) result = s;
  }
  started_ = true;
  if (!result.ok()) Stop();
  return result;
}

void ProactorPool::Stop() {
  if (!started_) return;
  for (Proactor* p : proactors_) p->Stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  started_ = false;
}

void ProactorPool::AwaitOn(unsigned index, const std::function<void(Proactor*)>& fn) {
  std::latch done(1);
  Proactor* p = proactors_[index];
  p->PostExternal([&] {
    p->Launch([&] {
      fn(p);
      done.count_down();
    });
  });
  done.wait();
}

void ProactorPool::AwaitOnAll(const std::function<void(Proactor*)>& fn) {
  std::latch done(size());
  for (Proactor* p : proactors_) {
    p->PostExternal([&, p] {
      p->Launch([&, p] {
        fn(p);
        done.count_down();
      });
    });
  }
  done.wait();
}

}  // namespace shardis::io
