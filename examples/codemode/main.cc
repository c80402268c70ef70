// examples/codemode: code mode from C++ with isolane::codemode::Executor. It runs a snippet (as an
// AI agent would write it) that calls two tools this program answers, and prints the result.
//
//   build/examples/codemode            # prints {"total":...} and the console lines
#include <isolane/executor.h>

#include <iostream>
#include <string>

int main() {
  isolane::codemode::ExecutorConfig config;
  config.workers = 1;
  isolane::codemode::Executor executor(config);

  isolane::codemode::Request request;
  request.code = R"(import { currency } from 'settings'
async () => {
  const cart = await tools.shop.cart({ user: 'ada' });
  let total = 0;
  for (const item of cart.items) {
    const { price } = await tools.shop.price({ sku: item.sku });
    total += price * item.quantity;
  }
  console.log('priced', cart.items.length, 'items');
  return { total, currency };
})";
  request.modules.push_back({"settings", "export const currency = 'EUR'"});
  request.tools["shop"] = {"cart", "price"};

  // Tool calls arrive on the executor's threads: answer at once or later, from any thread.
  auto dispatcher = [](const isolane::codemode::ToolCall& call,
                       isolane::codemode::ToolReply reply) {
    if (call.tool == "cart") {
      reply(true, R"({"items":[{"sku":"pen","quantity":3},{"sku":"ink","quantity":1}]})");
    } else if (call.argsJson.find("\"pen\"") != std::string::npos) {
      reply(true, R"({"price":2})");
    } else if (call.argsJson.find("\"ink\"") != std::string::npos) {
      reply(true, R"({"price":7})");
    } else {
      reply(false, "unknown sku");
    }
  };
  isolane::codemode::Result result = executor.execute(request, dispatcher).get();
  if (!result.ok()) {
    std::cerr << result.error->code << ": " << result.error->message << "\n";
    return 1;
  }
  std::cout << result.json << "\n";
  for (const std::string& line : result.logs) std::cout << line << "\n";
  std::cout << result.toolCalls << " tool calls, " << result.durationUs << " us\n";
  return 0;
}
