import { readFileSync } from 'node:fs';
import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { parse as parseYaml } from 'yaml';
import { AppConfig } from '#libs/config';
import { parseModelPricesFile } from './model-price-input.js';
import { ModelPricesRepository } from './model-prices.repository.js';

/**
 * The prices of MODEL_PRICES_FILE (JSON or YAML: `{"provider:model": {input_per_mtok_usd, …}}`)
 * are set at start, in the api only: created or replaced (a price set through the admin API since
 * is replaced again at the next start). A file that cannot be read or holds an invalid price stops
 * the start with every problem listed.
 */
@Injectable()
export class ModelPricesFile implements OnApplicationBootstrap {
  private readonly logger = new Logger(ModelPricesFile.name);

  constructor(
    private readonly config: AppConfig,
    private readonly prices: ModelPricesRepository,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const file = this.config.modelPricesFile;
    if (!file) return;
    let parsed: unknown;
    try {
      const text = readFileSync(file, 'utf8');
      parsed = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text);
    } catch (error) {
      throw new Error(`MODEL_PRICES_FILE ${file} cannot be read: ${(error as Error).message}`, { cause: error });
    }
    const prices = parseModelPricesFile(parsed, file);
    const created = await this.prices.seed(prices);
    this.logger.log(`MODEL_PRICES_FILE ${file}: ${prices.length} prices, ${created} new`);
  }
}
