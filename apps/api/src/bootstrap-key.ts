import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { AuthService } from '#libs/auth';
import { AppConfig } from '#libs/config';

/** BOOTSTRAP_API_KEY becomes a usable full-scope key as soon as the api is up. */
@Injectable()
export class BootstrapKey implements OnApplicationBootstrap {
  constructor(
    private readonly auth: AuthService,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.auth.assertConfigured();
    if (this.config.bootstrapApiKey) await this.auth.ensureBootstrapKey(this.config.bootstrapApiKey);
  }
}
