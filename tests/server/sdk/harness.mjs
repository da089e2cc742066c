// What the SDK test files share: the two clients for a running `ember serve`
// (usage: node FILE.mjs URL API_KEY) and named checks that run in order, the
// first failure exiting 1.
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

export const [url, key] = process.argv.slice(2);
export const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
export const anthropic = new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 });
export const MODEL = 'tiny';
export const user = text => [{ role: 'user', content: text }];

const checks = [];
export const check = (name, fn) => checks.push([name, fn]);

export async function runChecks(file) {
  for (const [name, fn] of checks) {
    try {
      await fn();
      console.log(`ok   ${name}`);
    } catch (e) {
      console.log(`FAIL ${name}\n${e.stack ?? e}`);
      process.exit(1);
    }
  }
  console.log(`${file}: ${checks.length} checks passed`);
}
