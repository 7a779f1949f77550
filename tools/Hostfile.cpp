//===- Hostfile.cpp - hosts for a launch across machines -----------------===//
#include "tools/Hostfile.h"
#include "tools/ToolCommon.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include <optional>

namespace partita {

llvm::Expected<std::vector<HostSlots>> parseHostfile(llvm::StringRef text, llvm::StringRef path) {
  std::vector<HostSlots> hosts;
  llvm::StringMap<size_t> index;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i].split('#').first.trim();
    if (line.empty())
      continue;
    std::string where = (path + ":" + llvm::Twine(i + 1) + ": ").str();
    // Any blanks between words, and around '=' (Open MPI takes `slots = 4`).
    std::string joined;
    for (llvm::StringRef rest = line; !rest.empty();) {
      auto [word, tail] = rest.split('=');
      joined += word.trim().str();
      if (rest.contains('='))
        joined += '=';
      rest = tail.ltrim();
    }
    llvm::SmallVector<llvm::StringRef> words;
    llvm::SplitString(joined, words, " \t\v\f");
    HostSlots h;
    h.name = words[0].str();
    for (llvm::StringRef w : llvm::makeArrayRef(words).drop_front()) {
      auto [key, value] = w.split('=');
      if (key == "slots") {
        if (value.getAsInteger(10, h.slots) || h.slots < 1)
          return fail(where + "slots=" + value + " of host " + h.name + ": expected a whole number >= 1");
      } else if (key != "max_slots" && key != "max-slots") { // an mpirun cap; the placement uses slots
        return fail(where + "'" + w + "': expected `HOST [slots=N] [max_slots=M]`");
      }
    }
    if (auto [it, added] = index.try_emplace(h.name, hosts.size()); !added)
      hosts[it->second].slots += h.slots; // as mpirun counts a host named twice
    else
      hosts.push_back(std::move(h));
  }
  if (hosts.empty())
    return fail(path + ": names no host");
  return hosts;
}

llvm::Expected<std::vector<HostRanks>> placeRanks(const std::vector<HostSlots> &hosts, int ranks, int tp,
                                                  llvm::StringRef path) {
  std::vector<HostRanks> placement;
  int next = 0, usable = 0;
  std::vector<std::string> short_;
  for (const HostSlots &h : hosts) {
    int whole = h.slots / tp * tp;
    usable += whole;
    if (whole < h.slots)
      short_.push_back(h.name + " has " + std::to_string(h.slots) + " slot" + (h.slots > 1 ? "s" : "") + ", " +
                       std::to_string(whole) + " usable");
    int take = std::min(whole, ranks - next);
    if (take > 0) {
      placement.push_back({h.name, next, take});
      next += take;
    }
  }
  if (next < ranks)
    return fail("--hostfile " + path + ": the plan's " + llvm::Twine(ranks) + " ranks need " + llvm::Twine(ranks) +
                " slots; the hosts have " + llvm::Twine(usable) + " in whole tensor-parallel groups of " +
                llvm::Twine(tp) + (short_.empty() ? "" : " (" + llvm::join(short_, "; ") + ")") +
                " (a tp group all-reduces every layer and is kept inside a host)");
  return placement;
}

std::string mpirunHosts(const std::vector<HostRanks> &placement) {
  std::vector<std::string> parts;
  for (const HostRanks &h : placement)
    parts.push_back(h.name + ":" + std::to_string(h.count));
  return llvm::join(parts, ",");
}

std::string describePlacement(const std::vector<HostRanks> &placement) {
  std::vector<std::string> parts;
  for (const HostRanks &h : placement)
    parts.push_back(h.name + " " + std::to_string(h.first) +
                    (h.count > 1 ? "-" + std::to_string(h.first + h.count - 1) : ""));
  return llvm::join(parts, ", ");
}

static constexpr llvm::StringLiteral kCheckTag = "partita-host-check";

std::string formatHostCheck(const HostCheck &c) {
  std::string line = std::string(kCheckTag) + "\t" + c.host + "\t" + (c.statusDirSeen ? "status" : "nostatus") + "\t";
  for (char ch : c.error) // one line, whatever the message holds
    line += ch == '\n' || ch == '\t' ? ' ' : ch;
  return line + "\n";
}

static std::optional<HostCheck> parseHostCheck(llvm::StringRef line) {
  // From the tag on: mpirun may prefix lines (orte_tag_output, timestamps).
  size_t at = line.find(kCheckTag);
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  llvm::SmallVector<llvm::StringRef> f;
  line.drop_front(at).rtrim("\r").split(f, '\t', 3);
  if (f.size() != 4 || f[0] != kCheckTag)
    return std::nullopt;
  return HostCheck{f[1].str(), f[3].str(), f[2] == "status"};
}

llvm::Expected<std::vector<HostCheck>> runHostChecks(std::vector<std::string> args,
                                                      const std::vector<HostRanks> &placement,
                                                      const std::vector<std::string> &workerArgs) {
  std::vector<HostRanks> one = placement;
  for (HostRanks &h : one)
    h.count = 1;
  args.insert(args.end(), {"-n", std::to_string(one.size()), "--host", mpirunHosts(one), "--map-by", "node"});
  args.insert(args.end(), workerArgs.begin(), workerArgs.end());
  args.push_back("--check-host");
  llvm::SmallString<128> out;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("partita-host-check", "txt", out))
    return fail("cannot make a temporary file for the host checks: " + ec.message());
  llvm::FileRemover removeOut(out);
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, llvm::StringRef(out), llvm::StringRef(out)};
  std::string errMsg;
  int rc = llvm::sys::ExecuteAndWait(args[0], refs, llvm::None, redirects, 0, 0, &errMsg);
  auto buf = llvm::MemoryBuffer::getFile(out);
  llvm::StringRef text = buf ? (*buf)->getBuffer() : "";
  std::vector<HostCheck> checks;
  std::vector<std::string> other, failed;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    if (auto c = parseHostCheck(line)) {
      if (!c->error.empty())
        failed.push_back("host " + c->host + ": " + c->error);
      checks.push_back(std::move(*c));
    } else {
      other.push_back(line.str());
    }
  }
  if (!failed.empty())
    return fail("before starting any rank: " + llvm::join(failed, "; "));
  if (rc != 0 || checks.size() != one.size()) {
    if (other.size() > 30) // mpirun's message: its first lines (the launch agent's, ssh's) name the host
      other.resize(30);
    return fail("checking the files on each host (" + llvm::Twine(one.size()) + " host" +
                (one.size() > 1 ? "s" : "") + ", " + mpirunHosts(one) + ") failed: " + llvm::Twine(checks.size()) +
                " answered, mpirun exit code " + llvm::Twine(rc) + (errMsg.empty() ? "" : " (" + errMsg + ")") +
                (other.empty() ? "" : ":\n" + llvm::join(other, "\n")));
  }
  return checks;
}

std::vector<HostRanks> placementOf(const std::vector<std::string> &hostOfRank) {
  std::vector<HostRanks> runs;
  for (int r = 0; r < static_cast<int>(hostOfRank.size()); ++r) {
    if (runs.empty() || runs.back().name != hostOfRank[r])
      runs.push_back({hostOfRank[r], r, 0});
    ++runs.back().count;
  }
  return runs;
}

} // namespace partita
