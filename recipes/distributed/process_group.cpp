#include "distributed/process_group.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <stdexcept>

// ProcessGroupGloo.hpp declares its class only where the build says Gloo is in (Debian's LibTorch has it).
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

namespace tb::distributed {
namespace {

ProcessGroup* g_default = nullptr;

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

std::string endpoint(const World& w) { return w.master_addr + ":" + std::to_string(w.master_port); }

// c10d's socket errors are paragraphs; what the user needs is which address and what went wrong.
[[noreturn]] void rethrow_rendezvous_error(const World& w, const std::exception& e) {
  const std::string what = e.what();
  if (what.find("Address already in use") != std::string::npos || what.find("errno: 98") != std::string::npos)
    throw std::runtime_error("rendezvous: port " + std::to_string(w.master_port) + " on " + w.master_addr +
                             " is already in use (another run, or another program); pick a free --master-port");
  if (what.find("timed out") != std::string::npos || what.find("Timeout") != std::string::npos)
    throw std::runtime_error("rendezvous: rank " + std::to_string(w.rank) + " waited " + std::to_string(w.timeout_s) +
                             " s for the other ranks at " + endpoint(w) + " (is rank 0 running, and the address right?)");
  const std::string first_line = what.substr(0, what.find('\n'));
  throw std::runtime_error("rendezvous at " + endpoint(w) + " failed for rank " + std::to_string(w.rank) + ": " +
                           first_line);
}

// A collective that failed: Gloo says which socket operation timed out or broke; the user needs to know
// that a peer stopped answering.
template <class Work>
void wait_for(const Work& work, const World& w, const char* what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    const std::string why = e.what();
    std::string lower = why;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    // Gloo says "Timed out waiting ... for recv" or "Application timeout caused pair closure".
    const bool timed_out = lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos;
    throw std::runtime_error(std::string("data parallel: the ") + what + " on rank " + std::to_string(w.rank) +
                             " failed: another rank " +
                             (timed_out
                                  ? "did not answer for " + std::to_string(w.timeout_s) + " s (hung, or stopped)"
                                  : "is gone (it ended or was killed)") +
                             " [" + why.substr(0, why.find('\n')) + "]");
  }
}

}  // namespace

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
};

ProcessGroup::ProcessGroup(const World& world) : world_(world), impl_(std::make_unique<Impl>()) {
  const auto timeout = std::chrono::milliseconds(int64_t(world.timeout_s) * 1000);
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(world.master_port);
    options.isServer = world.rank == 0;
    options.numWorkers = world.size;
    options.waitWorkers = true;  // every rank has connected once the constructors return
    options.timeout = timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(world.master_addr, options);
    impl_->store = tcp;
    auto gloo_options = c10d::ProcessGroupGloo::Options::create();
    gloo_options->timeout = timeout;
    // The interface the peers reach this process on: loopback for a run on one machine, else the one
    // GLOO_SOCKET_IFNAME names (torch's variable), else the one this host's name resolves to.
    if (is_loopback(world.master_addr))
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("gloo", impl_->store), world.rank, world.size, gloo_options);
  } catch (const std::exception& e) {
    rethrow_rendezvous_error(world, e);
  }
}

ProcessGroup::~ProcessGroup() = default;

namespace {

class GlooSum : public PendingSum {
 public:
  GlooSum(c10d::ProcessGroupGloo& gloo, const World& world, std::vector<at::Tensor> members)
      : world_(world), members_(std::move(members)) {
    std::vector<at::Tensor> flat;
    for (const auto& t : members_) flat.push_back(t.detach().to(at::kFloat).reshape({-1}));
    std::vector<at::Tensor> one{at::cat(flat)};
    flat_ = one[0];
    work_ = gloo.allreduce(one);
  }
  ~GlooSum() override {
    if (work_) try {
        work_->wait();  // a buffer the collective still writes to must outlive it
      } catch (const std::exception&) {
      }
  }
  void finish(bool write_back) override {
    if (!work_) return;  // finished already
    auto work = std::move(work_);
    wait_for(work, world_, "gradient all-reduce");
    if (!write_back) return;
    int64_t offset = 0;
    for (auto& t : members_) {
      t.detach().copy_(flat_.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }

 private:
  const World& world_;
  std::vector<at::Tensor> members_;
  at::Tensor flat_;
  c10::intrusive_ptr<c10d::Work> work_;  // c10d::Work in LibTorch 1.13 and 2.x
};

}  // namespace

std::unique_ptr<PendingSum> ProcessGroup::start_sum(const std::vector<at::Tensor>& tensors) {
  return std::make_unique<GlooSum>(*impl_->gloo, world_, tensors);
}

std::vector<double> ProcessGroup::sum(const std::vector<double>& values) {
  std::vector<at::Tensor> one{at::tensor(values, at::kDouble)};
  wait_for(impl_->gloo->allreduce(one), world_, "sum of the step's loss and tokens");
  const auto* p = one[0].data_ptr<double>();
  return std::vector<double>(p, p + values.size());
}

void ProcessGroup::publish(const std::string& key, const std::string& value) {
  impl_->store->set("tunebench/" + key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string ProcessGroup::await(const std::string& key) {
  const auto bytes = impl_->store->get("tunebench/" + key);  // waits up to the store's timeout
  return std::string(bytes.begin(), bytes.end());
}

ProcessGroup* default_group() { return g_default; }

ProcessGroupScope::ProcessGroupScope(const World& world) {
  if (world.size <= 1) return;
  group_ = std::make_unique<ProcessGroup>(world);
  g_default = group_.get();
}

ProcessGroupScope::~ProcessGroupScope() {
  if (g_default == group_.get()) g_default = nullptr;
}

}  // namespace tb::distributed
